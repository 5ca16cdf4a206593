"""Chemistry-aware normalisation of chemical names and canonical identifier formatting: the
mop30 pack's ``naming`` hook (`NAMING`), used by grounding in place of the generic rules.

The normaliser removes spelling noise only: case, whitespace, dash and quote variants, Greek
letters, subscripts, bracket shapes, hydrate notation, oxidation-state spelling and the word
order of inverted (CAS index) names. It never drops locants, primes, charges, stereo descriptors
or brackets, so different chemicals stay different.

>>> normalise_name("Copper (II)  Nitrate · 3 H₂O")
'copper(ii) nitrate·3h2o'
>>> normalise_name("copper(2+) nitrate trihydrate") == normalise_name("Copper(II) nitrate·3H2O")
True
>>> normalise_name("β‐Alanine") == normalise_name(".beta.-alanine") == "beta-alanine"
True
>>> normalise_name("1,2-dichlorobenzene") == normalise_name("1,3-dichlorobenzene")
False
>>> normalise_name("4,4′-bipyridine")
"4,4'-bipyridine"
>>> normalise_name("(±)-Nicotine") == normalise_name("(+/-)-nicotine") == "(+-)-nicotine"
True
>>> normalise_name("Benzene, 1-chloro-2-iodo-, (S)-"), normalise_name("Acetic acid, vinyl ester")
('(s)-1-chloro-2-iodobenzene', 'acetic acid vinyl ester')
>>> normalise_name("Benzoic acid, 3 chloro 4 methyl")  # hyphens lost: "-yl" ends a prefix too
'3 chloro 4 methylbenzoic acid'
>>> from kgctl.grounding.normalise import squeeze
>>> squeeze(normalise_name("2,3-dihydroxy-benzoic acid")) == squeeze("2,3-dihydroxybenzoic acid")
True
>>> protected_signature("cis-1,2-dichloroethene") == protected_signature("trans-1,2-dichloroethene")
False
>>> protected_signature("(2e)-2-butenal") == protected_signature("(2z)-2-butenal")
False
>>> protected_signature("methyl parasept") == protected_signature("ethyl parasept")
False
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from chemicals.elements import periodic_table

from kgctl.chemistry.formula import HYDRATE_DOTS as _HYDRATE_DOTS
from kgctl.chemistry.formula import hill_formula
from kgctl.grounding.normalise import Naming

GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta",
    "η": "eta", "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu",
    "ξ": "xi", "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau",
    "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega", "µ": "mu",
}
_GREEK_TABLE = str.maketrans(GREEK)
_GREEK_WORDS = "|".join(sorted(set(GREEK.values()), key=len, reverse=True))
# PubChem writes Greek letters as ".alpha."
_DOTTED_GREEK = re.compile(rf"\.({_GREEK_WORDS})\.")
_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"), "-")
_PRIMES = dict.fromkeys(map(ord, "\u2018\u2019\u2032\u00b4\u0060\u201b"), "'")
_DOUBLE_PRIMES = dict.fromkeys(map(ord, "\u2033\u201c\u201d"), "''")
_BRACKETS = {ord("["): "(", ord("]"): ")", ord("{"): "(", ord("}"): ")"}
_NUMBER_WORDS = {
    "hemi": "0.5", "mono": "1", "sesqui": "1.5", "di": "2", "tri": "3", "tetra": "4",
    "penta": "5", "hexa": "6", "hepta": "7", "octa": "8", "nona": "9", "deca": "10",
    "dodeca": "12",
}
_HYDRATE_WORD = re.compile(
    rf"\s*\b({'|'.join(sorted(_NUMBER_WORDS, key=len, reverse=True))})?hydrate\b"
)
_HYDRATE_DOT = re.compile(rf"\s*[{re.escape(_HYDRATE_DOTS)}]\s*(\d+(?:\.\d+)?|[xn])?\s*h2o\b")
_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii")
_ELEMENT_NAMES = "|".join(
    sorted((e.name.lower() for e in periodic_table), key=len, reverse=True)
    + ["aluminum", "cesium", "sulphur"]
)
# "copper(2+)" -> "copper(ii)": an element name followed by a cationic charge is its state
_ELEMENT_CHARGE = re.compile(rf"\b({_ELEMENT_NAMES})\s*\(\s*([1-8])\+\s*\)")
_ELEMENT_ROMAN = re.compile(rf"\b({_ELEMENT_NAMES})\s*\(\s*({'|'.join(_ROMAN)})\s*\)")
_NO_SPACE_AROUND = "(,'-"
_STEREO_WORDS = (
    "cis", "trans", "e", "z", "r", "s", "d", "l", "dl", "rac", "meso", "endo", "exo", "syn",
    "anti", "o", "m", "p", "n", "sec", "tert", "t", "iso", "neo", "ortho", "meta", "para",
)
# a comma ending a clause of an inverted name ("benzene, 1-chloro-, (s)-"): after a word of
# three or more letters, a prefix's hyphen or an oxidation state; commas after digits, single
# letters or Greek words separate locants
_CLAUSE_COMMA = re.compile(r"(?:(?<=[a-z]{3})|(?<=-)|(?<=[a-z]\)))\s*,\s*")
# a clause that is a substituent prefix even without its trailing hyphen ("3 chloro 4 methyl")
_PREFIX_END = re.compile(r"(?:yl|o|oxy|ylidene)\)*$")
_DESCRIPTOR = re.compile(r"^\([^()]*\)-$")  # a whole bracketed stereo descriptor: "(+-)-"
_GREEK_END = re.compile(rf"\b(?:{_GREEK_WORDS})$")
# carbon-chain stems: "methyl" and "ethyl" are one letter apart and different chemicals
_CHAIN_STEMS = ("meth", "eth", "prop", "but", "pent", "hex", "hept", "oct", "non", "dec")
_PROTECTED = re.compile(
    rf"\d+|\((?:{'|'.join(_ROMAN)})\)|[+-]\)|'+"
    rf"|(?<![a-z])(?:{'|'.join(_STEREO_WORDS)}|{_GREEK_WORDS})(?![a-z])"  # also "(2e)", "3beta"
    rf"|{'|'.join(_CHAIN_STEMS)}"
)


@lru_cache(maxsize=65536)
def normalise_name(name: str) -> str:
    """Canonical spelling of a chemical name for exact matching (see module doctest)."""
    text = unicodedata.normalize("NFKC", name) if not name.isascii() else name
    text = text.casefold()
    if not text.isascii():  # subscripts, full-width forms, dashes, primes, Greek, accents
        text = text.translate(_DASHES).translate(_DOUBLE_PRIMES).translate(_PRIMES)
        text = text.translate(_GREEK_TABLE)
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    if "." in text:
        text = _DOTTED_GREEK.sub(r"\1", text)
    if "+/-" in text or "±" in text:  # racemates: "(+/-)", "(±)" and "(+-)" alike
        text = text.replace("+/-", "+-").replace("±", "+-")
    text = " ".join(text.translate(_BRACKETS).split())
    if "," in text:
        text = _uninvert(text)
    if "hydrate" in text:
        text = _HYDRATE_WORD.sub(_hydrate_from_word, text)
    if "h2o" in text:
        text = _HYDRATE_DOT.sub(lambda m: f"·{m.group(1) or '1'}h2o", text)
    if "(" in text:
        if "+" in text:
            text = _ELEMENT_CHARGE.sub(
                lambda m: f"{m.group(1)}({_ROMAN[int(m.group(2)) - 1]})", text)
        if " (" in text:
            text = _ELEMENT_ROMAN.sub(r"\1(\2)", text)
    if " " in text:  # single spaces by now: plain replaces beat a regex with a template
        for char in _NO_SPACE_AROUND:
            if char in text:
                text = text.replace(" " + char, char).replace(char + " ", char)
        text = text.replace(" )", ")")
    return text.strip(" ;,")  # PubChem synonyms may end in a stray ";"


def _uninvert(text: str) -> str:
    """An inverted name in reading order: "parent, prefix-, (stereo)-, modifier" becomes
    "(stereo)-prefix-parent modifier". Only clause commas and a joining hyphen go, so the
    protected signature is unchanged."""
    cuts = [m for m in _CLAUSE_COMMA.finditer(text) if not _GREEK_END.search(text, 0, m.start())]
    if not cuts:
        return text
    bounds = [0, *(m.start() for m in cuts), len(text)]
    starts = [0, *(m.end() for m in cuts)]
    parent, *clauses = (text[a:b].strip() for a, b in zip(starts, bounds[1:], strict=True))
    prefixes = [c for c in clauses if c.endswith("-") or _PREFIX_END.search(c)]
    joined = "".join(reversed(prefixes))
    if joined.endswith("-") and parent[:1].isalpha() and not _DESCRIPTOR.match(prefixes[0]):
        joined = joined[:-1]  # "1-methyl-" + "benzene": "1-methylbenzene"; "(-)-limonene" stays
    return " ".join([joined + parent, *(c for c in clauses if c not in prefixes and c)])


def _hydrate_from_word(match: re.Match[str]) -> str:
    return f"·{_NUMBER_WORDS[match.group(1)] if match.group(1) else 'x'}h2o"


_UNKNOWN_HYDRATE = re.compile(
    rf"(?:\s*[{re.escape(_HYDRATE_DOTS)}-]\s*x?|x)[xn]\s*h2o\s*$|\s+hydrate\s*$", re.IGNORECASE)


def hydrate_parent(name: str) -> str | None:
    """The anhydrous name of a hydrate whose water content is not stated, else None.

    >>> hydrate_parent("VOSO4·xH2O"), hydrate_parent("VOSO4xxH2O")
    ('VOSO4', 'VOSO4')
    >>> hydrate_parent("vanadyl sulfate hydrate"), hydrate_parent("NiCl2·6H2O")
    ('vanadyl sulfate', None)
    """
    parent = _UNKNOWN_HYDRATE.sub("", name.strip())
    return parent if parent and parent != name.strip() else None


def protected_signature(normalised: str) -> str:
    """Locants, primes, charges, oxidation states, stereo descriptors and carbon-chain stems of
    a normalised name, as a sorted multiset. Two names with different signatures never denote
    the same chemical by fuzzy similarity.
    """
    return " ".join(sorted(_PROTECTED.findall(normalised)))


# ---- identifiers -------------------------------------------------------------------------

_INCHIKEY = re.compile(r"^[A-Z]{14}-[A-Z]{10}-[A-Z]$")
_CAS = re.compile(r"^(\d{2,7})-(\d{2})-(\d)$")
_INCHI_BODY = re.compile(r"^1S?/[0-9]*[A-Z][A-Za-z0-9.()*]*(/\S*)?$")


def canonical_identifier(kind: str, value: str) -> str | None:
    """Canonical form of an identifier value, or None when it is not well formed.

    >>> canonical_identifier("inchikey", " ulgzdmoveyaklm-uhfffaoysa-n ")
    'ULGZDMOVEYAKLM-UHFFFAOYSA-N'
    >>> canonical_identifier("cas", "64-17-5"), canonical_identifier("cas", "64-17-6")
    ('64-17-5', None)
    >>> canonical_identifier("inchi", "1S/CH4/h1H4"), canonical_identifier("inchi", "CH4/h1H4")
    ('InChI=1S/CH4/h1H4', 'InChI=1S/CH4/h1H4')
    >>> canonical_identifier("formula", "C2H6O"), canonical_identifier("formula", "ethanol")
    ('C2H6O', None)
    """
    if kind == "formula":  # normalised by the parser: a superscript charge reads as one
        return hill_formula(value)
    value = unicodedata.normalize("NFKC", value).strip()
    if kind == "inchikey":
        value = value.upper().removeprefix("INCHIKEY=")
        return value if _INCHIKEY.match(value) else None
    if kind == "inchi":
        body = value.removeprefix("InChI=")
        if not body.startswith(("1S/", "1/")):
            if "/" not in body:
                return None
            body = "1S/" + body  # PubChem-derived tables omit the standard-InChI prefix
        return "InChI=" + body if _INCHI_BODY.match(body) else None
    if kind == "cas":
        return value if _cas_valid(value) else None
    if kind == "cid":
        return str(int(value)) if value.isdigit() and int(value) > 0 else None
    if kind == "smiles":
        return value if value and " " not in value else None
    return value or None  # a kind the spec declares and chemistry does not know: as written


def _cas_valid(value: str) -> bool:
    match = _CAS.match(value)
    if not match:
        return False
    digits = (match.group(1) + match.group(2))[::-1]
    return sum((i + 1) * int(d) for i, d in enumerate(digits)) % 10 == int(match.group(3))


def identifiers_in(name: str) -> dict[str, str]:
    """Identifier kinds a free-text name is a well-formed instance of (InChIKey, CAS, ...).

    >>> identifiers_in("64-17-5")
    {'cas': '64-17-5'}
    >>> identifiers_in("Cu(NO3)2"), identifiers_in("copper nitrate")
    ({'formula': 'CuN2O6'}, {})
    """
    found = {}
    kinds = ("inchikey", "inchi", "cas", "formula") if name.startswith("InChI=") else (
        "inchikey", "cas", "formula")
    for kind in kinds:
        canonical = canonical_identifier(kind, name)
        if canonical is not None:
            found[kind] = canonical
    return found


_ORGANIC_FORMULA = re.compile(r"C(?![a-z])")  # Hill order puts carbon first


def _decisive(kind: str, value: str) -> bool:
    """A formula with carbon never decides: one reference species with it is no proof that
    the name meant that isomer, so it only ranks candidates."""
    return not (kind == "formula" and _ORGANIC_FORMULA.match(value))


NAMING = Naming(normalise=normalise_name, signature=protected_signature,
                canonical=canonical_identifier, identifiers_in=identifiers_in,
                parent=hydrate_parent, decisive=_decisive,
                kinds=("inchikey", "cas", "inchi", "formula"),  # recognisable by their shape
                weights={"inchikey": 5, "inchi": 5, "cas": 4, "formula": 1})
