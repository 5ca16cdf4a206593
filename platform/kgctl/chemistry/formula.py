"""Molecular formulas: the one parser of grounding (`kgctl.chemistry.naming`), dedup keys
(`kgctl.chemistry.keys`) and minting, and the one Hill writer (`kgctl.chemistry.structure`).

Hill order over the whole composition: C, H, then alphabetical; without C all alphabetical.
Isotopes are ordered and written as RDKit writes them: those of C and H right after their
element (``C[13C]H3D``), the others after all natural elements, lightest first
(``H4NNa[15N]``); ``[2H]`` and ``[3H]`` as D and T (D is read, T is not: "THF" is no formula).

Hydrates and adducts are parts joined by a dot (or a space before the water: ``CuSO4 5H2O``),
each with an optional leading multiplier; nested round or square groups multiply. A net charge
ends the formula as RDKit writes it (``O4S-2``, ``H4N+``) or after a closing bracket, a caret,
a space or in superscript (``[Fe(CN)6]4-``, ``SO4^2-``, ``SO4 2-``, ``SO₄²⁻``); written
``-2``. Digits then a sign with nothing between (``NH4+``) are a count and a charge of one.

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
>>> hill_formula("SO₄²⁻"), hill_formula("SO4 2-"), hill_formula("NH4+"), hill_formula("PF6−")
('O4S-2', 'O4S-2', 'H4N+', 'F6P-')
>>> hill_formula("H3[13C][2H]"), hill_formula("CH3[3H]"), hill_formula("H2O.H2[18O]")
('[13C]H3D', 'CH3T', 'H4O[18O]')
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from chemicals.elements import periodic_table

HYDRATE_DOTS = "·•∙⋅.*×"
_PARTS = re.compile(f"[{re.escape(HYDRATE_DOTS)}]")
_SPACE_BEFORE_WATER = re.compile(rf"(?<=[^\s{re.escape(HYDRATE_DOTS)}])\s+(?=\d*\s*H2O\b)")
_TOKEN = re.compile(r"\[(\d+)([A-Z][a-z]?)\](\d*)|([A-Z][a-z]?)(\d*)|([(\[])|([)\]])(\d*)")
_PART = re.compile(r"^(\d*)(.+)$")
_FRAGMENT = re.compile(r"^\[(?!\d).*\]$")  # wholly bracketed, not opening with an isotope
_SUPERSCRIPT_CHARGE = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹]*[⁺⁻]$")
_SIGNS = str.maketrans({"−": "-", "–": "-", "⁻": "-", "⁺": "+", "＋": "+"})
# a net charge: magnitude then sign after a bracket, caret or space; or sign then magnitude
_CHARGE_AFTER = re.compile(r"(?:(?<=[)\]])|\s*\^|\s+)(\d*)([+-])$")
_CHARGE_SIGNED = re.compile(r"([+-])(\d*)$")
_ISOTOPE_AT_END = re.compile(r"\[\d+[A-Z][a-z]?\]$")  # "[2H]3+": a count, then the charge
ELEMENTS = frozenset(e.symbol for e in periodic_table)
# hydrogen isotopes written as letters; T is written, never read (THF)
_HYDROGEN_LETTERS = {2: "D", 3: "T"}
_READ_LETTERS = {"D": ("H", 2)}

Nuclide = tuple[str, int]  # (element, mass number; 0 for the natural isotope mix)


def hill_formula(text: str, *, fragments: bool = False) -> str | None:
    """The Hill formula of `text`, or None when it is not a formula. A wholly bracketed
    formula ("[Cu2]", "[(C6H4)(CO2)2]") is a building-unit fragment, not a molecule: None,
    unless `fragments`."""
    text = text.strip()
    superscript = _SUPERSCRIPT_CHARGE.search(text)
    if superscript:
        text = text[:superscript.start()] + "^" + superscript.group(0)
    text = unicodedata.normalize("NFKC", text).translate(_SIGNS)
    body, charge = _split_charge(text)
    body = _SPACE_BEFORE_WATER.sub("·", body).replace(" ", "")
    if not body or (not fragments and _FRAGMENT.match(text)):
        return None
    counts: Counter[Nuclide] = Counter()
    for part in _PARTS.split(body):
        match = _PART.match(part)
        part_counts = _counts(match.group(2)) if match else None
        if part_counts is None:
            return None
        for nuclide, n in part_counts.items():
            counts[nuclide] += n * int(match.group(1) or 1)
    return hill(counts) + charge


def hill(counts: Counter[Nuclide] | Counter[str]) -> str:
    """Counts of elements (symbols) or nuclides ((element, mass)) written in Hill order.

    >>> hill(Counter({"O": 4, "C": 8, "H": 4})), hill(Counter({("Cl", 0): 1, ("H", 2): 1}))
    ('C8H4O4', 'ClD')
    """
    nuclides = Counter({(k, 0) if isinstance(k, str) else k: n for k, n in counts.items() if n})
    carbon = any(element == "C" for element, _ in nuclides)
    order = sorted(nuclides, key=lambda nuclide: _hill_key(nuclide, carbon=carbon))
    return "".join(_symbol(x) + (str(nuclides[x]) if nuclides[x] > 1 else "") for x in order)


def _hill_key(nuclide: Nuclide, *, carbon: bool) -> tuple[int, str, int]:
    element, mass = nuclide
    if carbon and element in ("C", "H"):
        return 0 if element == "C" else 1, "", mass
    if mass and element != "H":  # after the natural elements, lightest first (as RDKit)
        return 3, f"{mass:04d}{element}", 0
    return 2, element, mass


def _symbol(nuclide: Nuclide) -> str:
    element, mass = nuclide
    if not mass:
        return element
    return _HYDROGEN_LETTERS.get(mass, f"[{mass}H]") if element == "H" else f"[{mass}{element}]"


def _split_charge(text: str) -> tuple[str, str]:
    """The formula without its net charge, and the charge as RDKit writes it ("-2", "+")."""
    after = _CHARGE_AFTER.search(text)
    if after and (after.group(0)[0] in " ^" or not (
            after.group(1) and _ISOTOPE_AT_END.search(text, 0, after.start()))):
        digits, sign, start = after.group(1), after.group(2), after.start()
    elif signed := _CHARGE_SIGNED.search(text):
        sign, digits, start = signed.group(1), signed.group(2), signed.start()
    else:
        return text, ""
    size = int(digits or 1)
    return text[:start], "" if size == 0 else sign + (str(size) if size > 1 else "")


def _counts(text: str) -> Counter[Nuclide] | None:
    """Nuclide counts of one formula part with nested groups, or None."""
    stack: list[Counter[Nuclide]] = [Counter()]
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return None
        mass, isotope, isotope_n, symbol, n, opening, closing, group_n = match.groups()
        if isotope:
            if isotope not in ELEMENTS or int(mass) == 0:
                return None
            stack[-1][(isotope, int(mass))] += int(isotope_n or 1)
        elif symbol:
            nuclide = _READ_LETTERS.get(symbol) or (symbol, 0)
            if nuclide[0] not in ELEMENTS:
                return None
            stack[-1][nuclide] += int(n or 1)
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
