"""Typed comparisons: numbers, dates, times and durations compared by value, with an explicit
cast when the data stores them as text.

A value is compared in the type of the stored values: a date given for ``xsd:dateTime`` values
becomes that day's midnight, and ``xsd:dateTimeStamp`` values compare as ``xsd:dateTime``. Text
values compared with an ordering operator are cast to the type the given value reads as (a
number: ``xsd:double``, a date: ``xsd:date``/``xsd:dateTime``, a duration: ``xsd:duration``);
the step says so, and rows whose text does not read as that type drop out. Dates given in part
(a year, a year and month) or stored in several temporal types (``xsd:gYear`` beside
``xsd:date``) are compared as ISO 8601 text, which orders them by time; the step says so too.

>>> comparable("2017-04-16", XSD + "dateTimeStamp")
('http://www.w3.org/2001/XMLSchema#dateTime', '2017-04-16T00:00:00')
>>> comparable("12.5", XSD + "string")
('http://www.w3.org/2001/XMLSchema#double', '12.5')
>>> comparable("soon", XSD + "date") is None
True
"""

from __future__ import annotations

import re

XSD = "http://www.w3.org/2001/XMLSchema#"
NUMERIC = tuple(XSD + t for t in (
    "integer", "int", "long", "short", "byte", "double", "float", "decimal",
    "nonNegativeInteger", "positiveInteger", "nonPositiveInteger", "negativeInteger",
    "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte"))
_PATTERNS = {
    XSD + "date": r"-?\d{4,}-\d\d-\d\d(Z|[+-]\d\d:\d\d)?",
    XSD + "dateTime": r"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?",
    XSD + "time": r"\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?",
    XSD + "gYear": r"-?\d{4,}(Z|[+-]\d\d:\d\d)?",
    XSD + "gYearMonth": r"-?\d{4,}-\d\d(Z|[+-]\d\d:\d\d)?",
    XSD + "duration": r"-?P(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?",
}
# stored type -> the type its values are compared in
# the lexical forms a cast to each type accepts, as SPARQL regular expressions (a cast is
# applied only to text that matches: some servers fail the whole query on a failed cast)
LEXICAL = {
    XSD + "double": r"^\s*[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?\s*$",
    **{kind: "^" + pattern.replace(r"\d", "[0-9]") + "$" for kind, pattern in _PATTERNS.items()},
}
COMPARED_AS = {XSD + "dateTimeStamp": XSD + "dateTime",
               XSD + "dayTimeDuration": XSD + "duration",
               XSD + "yearMonthDuration": XSD + "duration"}
TEMPORAL = (*_PATTERNS, *COMPARED_AS)
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
ISO_PREFIX = re.compile(r"\d{4}(-\d\d(-\d\d(T\d\d(:\d\d(:\d\d)?)?)?)?)?")


def iso_text(value: object, datatype: str) -> str | None:
    """The value as ISO 8601 text to compare with temporal values lexically, or None.

    >>> iso_text("1700", XSD + "date"), iso_text("soon", XSD + "date")
    ('1700', None)
    """
    text = str(value).strip()
    return text if datatype in TEMPORAL and ISO_PREFIX.fullmatch(text) else None


def ordered(datatype: str) -> bool:
    """Whether values of this type have an order (numbers, dates, times, durations)."""
    return datatype in NUMERIC or datatype in TEMPORAL


def comparable(value: object, datatype: str) -> tuple[str, str] | None:
    """(type, lexical form) to compare `value` with values stored as `datatype`; for text the
    type the value reads as; None when the value cannot be read so."""
    text = str(value).strip()
    target = COMPARED_AS.get(datatype, datatype)
    if target in NUMERIC or (target not in _PATTERNS and not isinstance(value, bool)
                             and NUMBER.fullmatch(text)):
        return (XSD + "double", repr(float(text))) if NUMBER.fullmatch(text) else None
    if target == XSD + "dateTime" and re.fullmatch(_PATTERNS[XSD + "date"], text):
        text = text[:10] + "T00:00:00" + text[10:]
    if target in _PATTERNS:
        return (target, text) if re.fullmatch(_PATTERNS[target], text) else None
    for kind in (XSD + "dateTime", XSD + "date", XSD + "duration"):  # text: what it reads as
        if re.fullmatch(_PATTERNS[kind], text):
            return kind, text
    return None
