"""Unit conversion for quantity filters: a table keyed by OM-2 unit IRIs.

Each unit maps to (dimension, factor, offset) with ``base = value * factor + offset`` in the
dimension's base unit (kelvin, second, cubic metre, pascal, kilogram, mole, ...). The table is
data about OM-2 units, not about any domain.

>>> round(to_base(100.0, OM2 + "degreeCelsius"), 2)
373.15
>>> round(from_base(to_base(212.0, OM2 + "degreeFahrenheit"), OM2 + "degreeCelsius"), 6)
100.0
>>> to_base(2.0, OM2 + "hour") == to_base(120.0, OM2 + "minute")
True
>>> same_dimension(OM2 + "millilitre", OM2 + "litre"), same_dimension(OM2 + "kelvin", OM2 + "hour")
(True, False)
"""

from __future__ import annotations

OM2 = "http://www.ontology-of-units-of-measure.org/resource/om-2/"

_F_TO_K = 5.0 / 9.0
_ZERO_C = 273.15
_ZERO_F = 459.67 * _F_TO_K
_MIN, _HOUR, _DAY = 60.0, 3600.0, 86400.0
_YEAR = 365.25 * _DAY  # Julian year; a month is a twelfth of it (papers give "1 month" ageing)
_LITRE = 1e-3
_ATM, _TORR, _PSI = 101325.0, 101325.0 / 760.0, 6894.757293168

# local name -> (dimension, factor, offset)
CONVERSIONS: dict[str, tuple[str, float, float]] = {
    "kelvin": ("temperature", 1.0, 0.0),
    "degreeCelsius": ("temperature", 1.0, _ZERO_C),
    "degreeFahrenheit": ("temperature", _F_TO_K, _ZERO_F),
    "second": ("time", 1.0, 0.0),
    "millisecond": ("time", 1e-3, 0.0),
    "microsecond": ("time", 1e-6, 0.0),
    "nanosecond": ("time", 1e-9, 0.0),
    "picosecond": ("time", 1e-12, 0.0),
    "minute": ("time", _MIN, 0.0),
    "hour": ("time", _HOUR, 0.0),
    "day": ("time", _DAY, 0.0),
    "week": ("time", 7 * _DAY, 0.0),
    "month": ("time", _YEAR / 12, 0.0),
    "year": ("time", _YEAR, 0.0),
    "cubicMetre": ("volume", 1.0, 0.0),
    "litre": ("volume", _LITRE, 0.0),
    "millilitre": ("volume", _LITRE * 1e-3, 0.0),
    "cubicCentimetre": ("volume", _LITRE * 1e-3, 0.0),
    "microlitre": ("volume", _LITRE * 1e-6, 0.0),
    "nanolitre": ("volume", _LITRE * 1e-9, 0.0),
    "picolitre": ("volume", _LITRE * 1e-12, 0.0),
    "pascal": ("pressure", 1.0, 0.0),
    "hectopascal": ("pressure", 1e2, 0.0),
    "kilopascal": ("pressure", 1e3, 0.0),
    "megapascal": ("pressure", 1e6, 0.0),
    "gigapascal": ("pressure", 1e9, 0.0),
    "millibar": ("pressure", 1e2, 0.0),
    "bar": ("pressure", 1e5, 0.0),
    "kilobar": ("pressure", 1e8, 0.0),
    "standardAtmosphere": ("pressure", _ATM, 0.0),
    "torr": ("pressure", _TORR, 0.0),
    "millimetreOfMercury": ("pressure", 133.322387415, 0.0),
    "poundForcePerSquareInch": ("pressure", _PSI, 0.0),
    "kilogram": ("mass", 1.0, 0.0),
    "gram": ("mass", 1e-3, 0.0),
    "milligram": ("mass", 1e-6, 0.0),
    "microgram": ("mass", 1e-9, 0.0),
    "nanogram": ("mass", 1e-12, 0.0),
    "picogram": ("mass", 1e-15, 0.0),
    "mole": ("amount", 1.0, 0.0),
    "millimole": ("amount", 1e-3, 0.0),
    "micromole": ("amount", 1e-6, 0.0),
    "nanomole": ("amount", 1e-9, 0.0),
    "picomole": ("amount", 1e-12, 0.0),
    "kelvinPerSecond": ("temperature_rate", 1.0, 0.0),
    "degreeCelsiusPerSecond": ("temperature_rate", 1.0, 0.0),
    "kelvinPerMinute": ("temperature_rate", 1.0 / _MIN, 0.0),
    "degreeCelsiusPerMinute": ("temperature_rate", 1.0 / _MIN, 0.0),
    "kelvinPerHour": ("temperature_rate", 1.0 / _HOUR, 0.0),
    "degreeCelsiusPerHour": ("temperature_rate", 1.0 / _HOUR, 0.0),
    "percent": ("fraction", 1e-2, 0.0),
    "permille": ("fraction", 1e-3, 0.0),
    "partsPerMillion": ("fraction", 1e-6, 0.0),
    "partsPerBillion": ("fraction", 1e-9, 0.0),
    "partsPerTrillion": ("fraction", 1e-12, 0.0),
}


def conversion(unit: str) -> tuple[str, float, float] | None:
    """(dimension, factor, offset) of a unit IRI, or None when the table lacks it."""
    return CONVERSIONS.get(unit[len(OM2):]) if unit.startswith(OM2) else None


def to_base(value: float, unit: str) -> float:
    dimension, factor, offset = _require(unit)
    return value * factor + offset


def from_base(value: float, unit: str) -> float:
    dimension, factor, offset = _require(unit)
    return (value - offset) / factor


def to_unit(unit: str, target: str) -> tuple[float, float]:
    """(factor, offset) with ``value_in_target = value * factor + offset``.

    >>> factor, offset = to_unit(OM2 + "degreeCelsius", OM2 + "kelvin")
    >>> factor, round(offset, 2), to_unit(OM2 + "hour", OM2 + "minute")
    (1.0, 273.15, (60.0, 0.0))
    """
    _, factor, offset = _require(unit)
    _, target_factor, target_offset = _require(target)
    return factor / target_factor, (offset - target_offset) / target_factor


def same_dimension(a: str, b: str) -> bool:
    ca, cb = conversion(a), conversion(b)
    return ca is not None and cb is not None and ca[0] == cb[0]


def convertible_units(unit: str) -> list[str]:
    """All unit IRIs of the table in the same dimension as ``unit`` (itself included), sorted."""
    dim = _require(unit)[0]
    return sorted(OM2 + name for name, (d, _, _) in CONVERSIONS.items() if d == dim)


def _require(unit: str) -> tuple[str, float, float]:
    found = conversion(unit)
    if found is None:
        raise KeyError(unit)
    return found
