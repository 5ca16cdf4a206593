"""Chemistry's key normalisers for deduplication (the mop30 pack's ``dedup_keys`` hook):
molecular formulas in Hill notation, CCDC deposition numbers and InChIKeys.

>>> hill_formula("CH3OH") == hill_formula("CH4O")
True
>>> hill_formula("Cu(NO3)2·6H2O")
'CuH12N2O12'
>>> hill_formula("Cu(NO3)2·3H2O") == hill_formula("Cu(NO3)2·6H2O")
False
>>> hill_formula("[Zr3O(OH)3(C5H5)3]")
'C15H18O4Zr3'
>>> hill_formula("n/a") is None
True
>>> hill_formula("Cp2ZrCl2") is None  # abbreviations are not formulas: no key, no conflict
True
>>> ccdc_key("CCDC 1528352") == ccdc_key("1528352")
True
"""

from __future__ import annotations

import re
from collections import Counter

from kgctl.dedup.keys import clean_text

_HYDRATE_DOTS = re.compile(r"\s*[·•⋅∙*.]\s*(?=\d*\s*H2O)")
_ELEMENT = re.compile(r"([A-Z][a-z]?)(\d*)")
_TOKEN = re.compile(r"[A-Z][a-z]?\d*|[()\[\]]\d*|\d+")
_MISSING = {"", "n/a", "na", "none", "-", "unknown"}
ELEMENTS = frozenset("""
H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr
Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm
Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No
Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og D""".split())


def _expand(tokens: list[str], pos: int, close: str | None) -> tuple[Counter, int]:
    counts: Counter = Counter()
    while pos < len(tokens):
        tok = tokens[pos]
        if tok[0] in "([":
            inner, pos = _expand(tokens, pos + 1, ")" if tok[0] == "(" else "]")
            mult = int(tokens[pos][1:] or 1) if pos < len(tokens) else 1
            for el, n in inner.items():
                counts[el] += n * mult
            pos += 1
            continue
        if tok[0] in ")]":
            if tok[0] != close:
                raise ValueError("unbalanced brackets")
            return counts, pos
        match = _ELEMENT.fullmatch(tok)
        if not match or match.group(1) not in ELEMENTS:  # e.g. "Cp", "Ph": abbreviations
            raise ValueError(f"not an element: {tok!r}")
        counts[match.group(1)] += int(match.group(2) or 1)
        pos += 1
    if close is not None:
        raise ValueError("unclosed bracket")
    return counts, pos


def hill_formula(formula: str) -> str | None:
    """Hill-notation key of a molecular formula (hydrates included), or None when the text is
    not a parseable formula."""
    text = clean_text(formula).replace(" ", "")
    if text.casefold() in _MISSING:
        return None
    total: Counter = Counter()
    try:
        for part in _HYDRATE_DOTS.split(text):
            mult_match = re.match(r"^(\d+)(?=[A-Z(\[])", part)
            mult = int(mult_match.group(1)) if mult_match else 1
            body = part[mult_match.end():] if mult_match else part
            tokens = _TOKEN.findall(body)
            if "".join(tokens) != body or not tokens:
                return None
            counts, _ = _expand(tokens, 0, None)
            for el, n in counts.items():
                total[el] += n * mult
    except (ValueError, IndexError):
        return None
    if not total:
        return None
    order = (["C", "H"] if "C" in total else []) + sorted(e for e in total if e not in {"C", "H"}
                                                         or "C" not in total)
    return "".join(f"{el}{total[el] if total[el] != 1 else ''}" for el in order)


def ccdc_key(text: str) -> str | None:
    """Digits of a CCDC deposition number ("CCDC 1528352" -> "1528352")."""
    digits = re.sub(r"\D", "", text)
    return digits or None


def inchikey_key(text: str) -> str | None:
    """Upper-cased InChIKey when the text has the 14-10-1 shape."""
    key = clean_text(text).upper().removeprefix("INCHIKEY=")
    return key if re.fullmatch(r"[A-Z]{14}-[A-Z]{10}-[A-Z]", key) else None


NORMALISERS = {"formula": hill_formula, "ccdc": ccdc_key, "inchikey": inchikey_key}
