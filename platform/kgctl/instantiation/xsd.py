"""Lexical forms and facets of the XSD datatypes a T-Box may use (pure checks).

>>> lexical_problem("2021-13-01", XSD + "date")
'not a valid xsd:date (e.g. 2024-05-31)'
>>> lexical_problem("yesterday", XSD + "dateTime")
'not a valid xsd:dateTime (e.g. 2024-05-31T14:30:00Z)'
>>> lexical_problem("1999", XSD + "gYear"), lexical_problem("http://x.org/a b", XSD + "anyURI")
(None, 'not a valid xsd:anyURI')
>>> facet_problem(120, {"maxInclusive": "100"}), facet_problem("ab1", {"pattern": "[a-z]+"})
('above the maximum 100', "does not match the pattern '[a-z]+'")
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from typing import Any

XSD = "http://www.w3.org/2001/XMLSchema#"
_ZONE = r"(Z|[+-]\d{2}:\d{2})"
_TZ = _ZONE + "?"
_YEAR = r"-?\d{4,}"
# datatype -> (lexical pattern, example shown in the finding)
_PATTERNS: dict[str, tuple[str, str]] = {
    "dateTime": (rf"{_YEAR}-\d{{2}}-\d{{2}}T\d{{2}}:\d{{2}}:\d{{2}}(\.\d+)?{_TZ}",
                 "2024-05-31T14:30:00Z"),
    "dateTimeStamp": (rf"{_YEAR}-\d{{2}}-\d{{2}}T\d{{2}}:\d{{2}}:\d{{2}}(\.\d+)?{_ZONE}",
                      "2024-05-31T14:30:00Z"),
    "date": (rf"{_YEAR}-\d{{2}}-\d{{2}}{_TZ}", "2024-05-31"),
    "time": (rf"\d{{2}}:\d{{2}}:\d{{2}}(\.\d+)?{_TZ}", "14:30:00"),
    "gYear": (rf"{_YEAR}{_TZ}", "2024"),
    "gYearMonth": (rf"{_YEAR}-(0[1-9]|1[0-2]){_TZ}", "2024-05"),
    "gMonth": (rf"--(0[1-9]|1[0-2]){_TZ}", "--05"),
    "gDay": (rf"---(0[1-9]|[12]\d|3[01]){_TZ}", "---31"),
    "gMonthDay": (rf"--(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]){_TZ}", "--05-31"),
    "duration": (r"-?P(?=\d|T)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?",
                 "P1DT2H"),
    "dayTimeDuration": (r"-?P(?=\d|T)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?", "PT2H"),
    "yearMonthDuration": (r"-?P(?=\d)(\d+Y)?(\d+M)?", "P1Y2M"),
    "anyURI": (r"[^\s<>\"{}|\\^`]*", "https://example.org/x"),
    "language": (r"[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*", "en-GB"),
    "normalizedString": (r"[^\t\n\r]*", "one line"),
    "token": (r"(\S+( \S+)*)?", "one line, single spaces"),
    "NCName": (r"[A-Za-z_][\w.\-]*", "name_1"),
    "Name": (r"[A-Za-z_:][\w.\-:]*", "name_1"),
    "hexBinary": (r"([0-9a-fA-F]{2})*", "0FB7"),
    "base64Binary": (r"[A-Za-z0-9+/ ]*={0,2}", "SGVsbG8="),
}
_COMPILED = {name: re.compile(p) for name, (p, _) in _PATTERNS.items()}
# integer sub-types: (lowest, highest) value
INTEGER_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "integer": (None, None), "nonNegativeInteger": (0, None), "positiveInteger": (1, None),
    "nonPositiveInteger": (None, 0), "negativeInteger": (None, -1),
    "long": (-2**63, 2**63 - 1), "int": (-2**31, 2**31 - 1), "short": (-2**15, 2**15 - 1),
    "byte": (-128, 127), "unsignedLong": (0, 2**64 - 1), "unsignedInt": (0, 2**32 - 1),
    "unsignedShort": (0, 2**16 - 1), "unsignedByte": (0, 255),
}


def is_textual(datatype: str | None) -> bool:
    """A datatype checked by its lexical form here (not a number or boolean)."""
    return bool(datatype) and datatype.startswith(XSD) and datatype[len(XSD):] in _PATTERNS


def lexical_problem(text: str, datatype: str) -> str | None:
    """Why `text` is not a lexical form of `datatype` (None when it is)."""
    name = datatype[len(XSD):]
    if name not in _COMPILED:
        return None
    example = _PATTERNS[name][1]
    message = (f"not a valid xsd:{name} (e.g. {example})" if name != "anyURI"
               else "not a valid xsd:anyURI")
    if not _COMPILED[name].fullmatch(text) or not _calendar_ok(name, text):
        return message
    return None


def _calendar_ok(name: str, text: str) -> bool:
    """Month/day/hour ranges of the date and time types (pattern checks only the shape)."""
    body = re.sub(r"(Z|[+-]\d{2}:\d{2})$", "", text) if name in (
        "dateTime", "dateTimeStamp", "date", "time") else text
    try:
        if name in ("dateTime", "dateTimeStamp"):
            day, clock = body.lstrip("-").split("T")
            date.fromisoformat(day[-10:])
            time.fromisoformat(clock if clock[:2] != "24" else "00" + clock[2:])
        elif name == "date":
            date.fromisoformat(body.lstrip("-")[-10:])
        elif name == "time":
            time.fromisoformat(body)
    except ValueError:
        return False
    return True


def facet_problem(value: Any, facets: dict[str, str]) -> str | None:
    """Why a coerced value violates a facet of its datatype restriction (None when not)."""
    text = value if isinstance(value, str) else str(value)
    for facet, bound in facets.items():
        if facet == "pattern" and not re.fullmatch(bound, text):
            return f"does not match the pattern {bound!r}"
        if facet in ("length", "minLength", "maxLength"):
            size, limit = len(text), int(bound)
            if (facet == "length" and size != limit) or (facet == "minLength" and size < limit) \
                    or (facet == "maxLength" and size > limit):
                return f"length {size} violates {facet} {limit}"
        if facet in ("minInclusive", "maxInclusive", "minExclusive", "maxExclusive"):
            here, there = _comparable(value), _comparable(bound)
            if here is None or there is None or type(here) is not type(there):
                continue
            if (facet == "minInclusive" and here < there) or (
                    facet == "minExclusive" and here <= there):
                return f"below the minimum {bound}" + (" (exclusive)" if "Ex" in facet else "")
            if (facet == "maxInclusive" and here > there) or (
                    facet == "maxExclusive" and here >= there):
                return f"above the maximum {bound}" + (" (exclusive)" if "Ex" in facet else "")
    return None


def _comparable(value: Any) -> float | str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        try:
            return datetime.fromisoformat(str(value).replace("Z", "+00:00")).isoformat()
        except ValueError:
            return None
