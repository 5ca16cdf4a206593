"""Pure normalisers for deduplication keys and labels.

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
>>> name_key("N, N-Dimethylformamide") == name_key("n,n-dimethylformamide")
True
>>> name_key("1,2-benzenedicarboxylic acid") == name_key("1,3-benzenedicarboxylic acid")
False
>>> locant_signature("copper(II) nitrate") == locant_signature("copper(I) nitrate")
False
>>> locant_signature("CuSO4 hydrate") == locant_signature("CuSO4 trihydrate")
False
>>> is_fragment("[(C6H3)(CO2)3]"), is_fragment("H3BTC")
(True, False)
>>> ccdc_key("CCDC 1528352") == ccdc_key("1528352")
True
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2212\u00ad"), "-")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_HYDRATE_DOTS = re.compile(r"\s*[·•⋅∙*.]\s*(?=\d*\s*H2O)")
_ELEMENT = re.compile(r"([A-Z][a-z]?)(\d*)")
_TOKEN = re.compile(r"[A-Z][a-z]?\d*|[()\[\]]\d*|\d+")
_ROMAN_STATE = re.compile(r"\(([IVX]+|[0-9]?[+-])\)", re.IGNORECASE)
_HYDRATION = re.compile(
    r"\b(?:mono|di|tri|tetra|penta|hexa|hepta|octa|nona|deca|)hydrate\b|anhydrous", re.IGNORECASE)
_FRAGMENT = re.compile(r"^\[.*\]$")
_MISSING = {"", "n/a", "na", "none", "-", "unknown"}
ELEMENTS = frozenset("""
H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr
Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm
Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No
Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og D""".split())


def clean_text(text: str) -> str:
    """NFKC, unified dashes and subscripts, collapsed whitespace (case kept)."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_SUBSCRIPTS)
    return " ".join(text.split())


@lru_cache(maxsize=1 << 18)  # names repeat across papers: normalise each spelling once
def name_key(label: str) -> str:
    """Exact-match key of a chemical name: case-folded, spacing after commas and around dashes
    removed; locants, primes, charges and brackets are kept (they tell chemicals apart)."""
    text = clean_text(label).casefold()
    text = re.sub(r"\s*([,\-])\s*", r"\1", text)
    return text


def locant_signature(label: str) -> tuple[str, ...]:
    """Digits and oxidation/charge states of a name: two names that differ here are different
    chemicals however similar the rest of the spelling is."""
    text = clean_text(label)
    states = tuple(m.group(1).upper() for m in _ROMAN_STATE.finditer(text))
    digits = tuple(re.findall(r"\d+", _ROMAN_STATE.sub("", text)))
    primes = ("'",) * text.count("'") + ("′",) * text.count("′")
    hydration = tuple(m.group(0).lower() for m in _HYDRATION.finditer(text))
    return (*states, "|", *digits, "|", *primes, "|", *hydration)


def is_fragment(label: str) -> bool:
    """A bracketed building-unit formula such as "[Cu2]": many reagents share it, so it is not
    evidence that two mentions are the same chemical."""
    return bool(_FRAGMENT.match(clean_text(label)))


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


NORMALISERS = {
    "formula": hill_formula,
    "ccdc": ccdc_key,
    "inchikey": inchikey_key,
    "iri": lambda text: text.strip() or None,
    "text": lambda text: name_key(text) or None,
}
