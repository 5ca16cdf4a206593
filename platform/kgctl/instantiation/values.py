"""Pure value checks and RDF term building for tool arguments.

Values are taken in the JSON type their schema shows, nothing else (no "2" for 2, no "yes"
for true):

>>> coerce_literal(42, XSD + "integer"), coerce_literal("42", XSD + "integer")[1]
((42, None), 'not an integer')
>>> coerce_literal("warm", XSD + "double")[1], coerce_literal("yes", XSD + "boolean")[1]
('not a number', 'not a boolean')
>>> coerce_literal(950330, None)[1]
'not a text value'
>>> looks_like_iri("https://w3id.org/x"), looks_like_iri("Cu:BTC"), looks_like_iri("<a> } DROP")
(True, False, True)
>>> iri_problem("https://w3id.org/x> } ; DROP ALL ; <y")
'characters not allowed in an IRI'
>>> coerce_literal("last Tuesday", XSD + "dateTime")[1]
'not a valid xsd:dateTime (e.g. 2024-05-31T14:30:00Z)'
>>> coerce_literal(300, XSD + "unsignedByte")[1]
'above 255'
>>> text_problem("ok\\x00"), text_problem("fine")
('control character in text', None)
"""

from __future__ import annotations

import math
import re
from typing import Any

from pyoxigraph import Literal, NamedNode

from kgctl.instantiation.xsd import INTEGER_BOUNDS, is_textual, lexical_problem

XSD = "http://www.w3.org/2001/XMLSchema#"
MAX_TEXT = 4000  # characters in one text value
MAX_ITEMS = 200  # values in one list argument
MAX_CALL_BYTES = 64_000  # JSON size of one call's arguments
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_IRI_FORBIDDEN = re.compile(r'[\s<>"{}|^`\\]')
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^urn:", re.IGNORECASE)
_INTEGERS = set(INTEGER_BOUNDS)
_FLOATS = {"decimal", "double", "float"}
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def xsd_name(datatype: str | None) -> str:
    return datatype[len(XSD):] if datatype and datatype.startswith(XSD) else "string"


def looks_like_iri(text: str) -> bool:
    """An argument string meant as an IRI (else it is a label)."""
    return text.startswith("<") or bool(_SCHEME.match(text))


def iri_problem(text: str) -> str | None:
    """Why `text` is not an acceptable IRI, or None."""
    body = text[1:-1] if text.startswith("<") and text.endswith(">") else text
    if _IRI_FORBIDDEN.search(body):
        return "characters not allowed in an IRI"
    try:
        NamedNode(body)
    except ValueError as exc:
        return str(exc)
    return None


def strip_iri(text: str) -> str:
    return text[1:-1] if text.startswith("<") and text.endswith(">") else text


def text_problem(text: str) -> str | None:
    if _CONTROL.search(text):
        return "control character in text"
    return None


def coerce_literal(value: Any, datatype: str | None) -> tuple[Any, str | None]:
    """The Python value of `value` for an xsd datatype, or (value, reason it is not)."""
    name = xsd_name(datatype)
    if name in _INTEGERS:
        if isinstance(value, bool):
            return value, "not an integer"
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema counts 2.0 as an integer
        if not isinstance(value, int):
            return value, "not an integer"
        low, high = INTEGER_BOUNDS[name]
        if low is not None and value < low:
            return value, f"below {low}"
        if high is not None and value > high:
            return value, f"above {high}"
        return value, None
    if name in _FLOATS:
        return coerce_number(value)
    if name == "boolean":
        return (value, None) if isinstance(value, bool) else (value, "not a boolean")
    if not isinstance(value, str):
        return value, "not a text value"
    if is_textual(datatype) and datatype:
        text = value.strip()
        return text, lexical_problem(text, datatype)
    return value, None


def coerce_number(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return value, "not a number"
    return value, None


def literal(value: Any, datatype: str | None) -> Literal:
    """RDF literal of an already coerced value (strings stay plain xsd:string)."""
    name = xsd_name(datatype)
    if isinstance(value, bool):
        return Literal("true" if value else "false", datatype=NamedNode(XSD + "boolean"))
    if name in _INTEGERS and isinstance(value, int):
        return Literal(str(value), datatype=NamedNode(XSD + name))
    if isinstance(value, int | float):
        return Literal(repr(float(value)), datatype=NamedNode(XSD + "double"))
    if datatype and name not in ("string",) and datatype.startswith(XSD):
        return Literal(str(value), datatype=NamedNode(datatype))
    return Literal(str(value))
