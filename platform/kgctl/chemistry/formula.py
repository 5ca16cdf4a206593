"""Molecular formulas: the one parser of grounding (`kgctl.chemistry.naming`), dedup keys
(`kgctl.chemistry.keys`) and minting, in Hill order over the whole composition (C, H, then
alphabetical; without C all alphabetical; D right after H, as PubChem writes it).

Hydrates and adducts are parts joined by a dot (or a space before the water: ``CuSO4 5H2O``),
each with an optional leading multiplier; nested round or square groups multiply; a trailing
charge is kept (``-4``).

>>> hill_formula("Cu(NO3)2·3H2O"), hill_formula("VCl3"), hill_formula("[Fe(CN)6]4-")
('CuH6N2O9', 'Cl3V', 'C6FeN6-4')
>>> hill_formula("CH3CH2OH"), hill_formula("VOSO4·xH2O"), hill_formula("THF")
('C2H6O', None, None)
>>> hill_formula("CO2"), hill_formula("C60"), hill_formula("C2D6O")
('CO2', 'C60', 'C2D6O')
>>> hill_formula("CuSO4 5H2O") == hill_formula("CuSO4 · 5H2O") == "CuH10O9S"
True
>>> hill_formula("[Cu2]"), hill_formula("[Cu2]", fragments=True), hill_formula("[Cu(NH3)4]SO4")
(None, 'Cu2', 'CuH12N4O4S')
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from chemicals.elements import periodic_table

HYDRATE_DOTS = "·•∙⋅.*×"
_PARTS = re.compile(f"[{re.escape(HYDRATE_DOTS)}]")
_SPACE_BEFORE_WATER = re.compile(rf"(?<=[^\s{re.escape(HYDRATE_DOTS)}])\s+(?=\d*\s*H2O\b)")
_TOKEN = re.compile(r"([A-Z][a-z]?)(\d*)|([(\[])|([)\]])(\d*)")
_PART = re.compile(r"^(\d*)(.+)$")
# a trailing charge: "-", "+2", or "4-" after a bracketed ion ("[Fe(CN)6]4-")
_CHARGE = re.compile(r"(?<=[)\]])\d*[+-]$|[+-]\d*$")
# D (deuterated solvents) but not T: "THF" is no formula
SYMBOLS = frozenset(e.symbol for e in periodic_table) | {"D"}
_HYDROGENS = ("H", "D")


def hill_formula(text: str, *, fragments: bool = False) -> str | None:
    """The Hill formula of `text`, or None when it is not a formula. A wholly bracketed
    formula ("[Cu2]", "[(C6H4)(CO2)2]") is a building-unit fragment, not a molecule: None,
    unless `fragments`."""
    text = _SPACE_BEFORE_WATER.sub("·", unicodedata.normalize("NFKC", text).strip())
    text = text.replace(" ", "")
    if not fragments and text.startswith("[") and text.endswith("]"):
        return None
    charge = _CHARGE.search(text)
    body = text[:charge.start()] if charge else text
    counts: Counter[str] = Counter()
    for part in _PARTS.split(body):
        match = _PART.match(part)
        part_counts = _counts(match.group(2)) if match else None
        if part_counts is None:
            return None
        for symbol, n in part_counts.items():
            counts[symbol] += n * int(match.group(1) or 1)
    order = sorted(counts, key=lambda s: _hill_key(s, carbon="C" in counts))
    formula = "".join(s + (str(counts[s]) if counts[s] > 1 else "") for s in order)
    if charge:
        sign, digits = charge.group(0).strip("0123456789"), charge.group(0).strip("+-")
        formula += sign + (digits if digits not in ("", "1") else "")
    return formula


def _hill_key(symbol: str, *, carbon: bool) -> tuple[str, int]:
    if symbol in _HYDROGENS:
        return ("", 1 + _HYDROGENS.index(symbol)) if carbon else ("H", _HYDROGENS.index(symbol))
    return ("", 0) if carbon and symbol == "C" else (symbol, 0)


def _counts(text: str) -> Counter[str] | None:
    """Element counts of one formula part with nested groups, or None."""
    stack: list[Counter[str]] = [Counter()]
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return None
        symbol, n, opening, closing, group_n = match.groups()
        if symbol:
            if symbol not in SYMBOLS:
                return None
            stack[-1][symbol] += int(n or 1)
        elif opening:
            stack.append(Counter())
        else:
            if len(stack) == 1:
                return None
            group = stack.pop()
            for key, value in group.items():
                stack[-1][key] += value * int(group_n or 1)
        pos = match.end()
    return stack[0] if len(stack) == 1 and stack[0] else None
