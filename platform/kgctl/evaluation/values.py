"""Formatting-only normalisation of record values (pure functions).

Only spelling is normalised, never meaning: whitespace, case where a field is
case-insensitive, unicode sub/superscripts, Greek letters, unit spellings (through the
OM-2 alias table) and number formatting. "2 days" and "48 hours" stay different.

>>> text("  Room   Temperature ")
'room temperature'
>>> formula("Cu(NO₃)₂ · 3H₂O")
'Cu(NO3)2·3H2O'
>>> quantity("0.045 g (0.276 mmol)")
'0.045 gram; 0.276 millimole'
>>> quantity("90.0 °C") == quantity("90 degree celsius")
True
>>> quantity("10 °C per hour"), quantity("2 d"), quantity("room temperature")
('10 degreeCelsiusPerHour', '2 day', 'room temperature')
>>> is_empty("N/A"), is_empty("n/a"), is_empty(-1), is_empty(False), is_empty("0")
(True, True, False, True, False)
>>> identifier("27734 5")
'277345'
>>> text("α-MOP") == text("alpha-MOP")
True
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache

from kgctl.ontology.quantities import aliases_beside
from kgctl.packs import load_pack

EMPTY_MARKERS = frozenset({"", "n/a", "na", "none", "null", "not provided", "-", "not available"})
NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
PART_SPLIT = re.compile(r"\s*[(),;]\s*")
PER = re.compile(r"\s*(?:/|\bper\b)\s*")

GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta",
    "η": "eta", "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu",
    "ξ": "xi", "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "τ": "tau", "υ": "upsilon",
    "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}
# typographic variants of the same character
SAME_CHARS = str.maketrans({
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "−": "-",
    "′": "'", "’": "'", "‘": "'", "″": '"', "“": '"', "”": '"',
    "•": "·", "⋅": "·", "∙": "·",
})


def is_empty(value: object) -> bool:
    """True for the spellings of "no value": None, False, "N/A"/"n/a", empty strings/lists."""
    if value is None or value is False:
        return True
    if isinstance(value, str):
        return value.strip().casefold() in EMPTY_MARKERS
    if isinstance(value, list | tuple | set | frozenset):
        return all(is_empty(v) for v in value)
    return False


def unify(value: str) -> str:
    """NFKC (sub/superscripts become digits), typographic variants unified, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", value).translate(SAME_CHARS).split())


def text(value: str) -> str:
    """Case-insensitive free text: unified, case-folded, Greek letters spelled out."""
    folded = unify(value).casefold()
    return "".join(GREEK.get(ch, ch) for ch in folded)


def formula(value: str) -> str:
    """Case-sensitive formula: unified, all whitespace removed."""
    return "".join(unify(value).split())


def identifier(value: str) -> str:
    """Identifier such as a deposition number: all whitespace removed."""
    return "".join(unify(value).split())


def number(value: str | float) -> str:
    """Canonical number text: '90.0' and '90' agree.

    >>> number("90.0"), number(1176.0), number("0.50"), number("1e3")
    ('90', '1176', '0.5', '1000')
    """
    as_float = float(value)
    return str(int(as_float)) if as_float.is_integer() else repr(as_float)


@cache
def unit_table() -> dict[str, str]:
    """Lower-cased unit spelling -> unit local name (aliases plus the local names), from the
    alias tables beside the default pack's T-Boxes."""
    aliases: dict[str, str] = {}
    for tbox in load_pack().ontology_paths():
        path = aliases_beside(tbox)
        if path.is_file():
            aliases.update(json.loads(path.read_text(encoding="utf-8"))["aliases"])
    table = {k.casefold(): v for k, v in aliases.items()}
    table.update({v.casefold(): v for v in aliases.values()})
    return table


def unit(spelling: str) -> str | None:
    """OM-2 local name of a unit spelling; compound 'X per Y' composed as OM-2 names them."""
    key = unify(spelling).casefold()
    table = unit_table()
    if key in table:
        return table[key]
    parts = PER.split(key)
    if len(parts) == 2 and all(p in table for p in parts):
        composed = table[parts[0]] + "Per" + table[parts[1]][:1].upper() + table[parts[1]][1:]
        return table.get(composed.casefold())
    return None


def quantity(value: str) -> str:
    """Canonical quantity text: 'number unit' parts joined by '; '; qualitative text as text."""
    parts = [p for p in PART_SPLIT.split(unify(value)) if p]
    canonical = []
    for part in parts:
        match = NUMBER.match(part)
        if not match:
            return text(value)
        amount, spelled = match.groups()
        resolved = unit(spelled) if spelled else ""
        canonical.append(f"{number(amount)} {resolved if resolved is not None else text(spelled)}")
    return "; ".join(c.strip() for c in canonical) if canonical else text(value)
