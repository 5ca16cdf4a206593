"""Structures from the several names a paper gives one chemical.

Each name is tried as written, then as its abbreviation's expansion, without a trailing
bracketed abbreviation ("5-ethoxy isophthalic acid (5-EIA)"), without the brackets of a
leading substituent ("(2,4,6-trimethylbenzene)-1,3,5-triacetic acid"), with "bi(" read as the
multiplier "bis(", with the lost primes of a ring assembly restored ("2,2-bipyridine" ->
"2,2'-bipyridine", tried first), and with a space before a
parent name closed up ("5-ethoxy isophthalic acid" -> "5-ethoxyisophthalic acid"). The names
then vote: the structure most names parse to wins, ties going to the name with more primed
locants (``2,2'-bipyridine`` says more than ``2,2-bipyridine``). How many names agree is part of
the answer: two agreeing names are evidence enough to mint a new reference species.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, ConfigDict

from kgctl.chemistry.opsin import Opsin
from kgctl.chemistry.structure import Structure, describe
from kgctl.grounding.abbreviations import expansions

PRIMES = "'′″‴"
_TRAILING_ABBREVIATION = re.compile(r"\s*\([^()]*\)\s*$")
_BRACKETED_LEAD = re.compile(r"^\(([^()]+)\)-(?=\d)")
_BI_BRACKET = re.compile(r"(?<=[\d,-])bi(?=\()")  # "1,4-bi(...)": the multiplier "bis"
# a ring assembly ("2,2-bipyridine-5,5-dicarboxylic acid") whose primes were lost: read as is,
# "5,5-" would put both groups on one atom of a partly saturated ring
_ASSEMBLY = re.compile(r"(?:bi|ter)(?:phenyl|pyridin|pyridyl|thiophen|naphthalen|imidazol)",
                       re.IGNORECASE)
_UNPRIMED_PAIR = re.compile(r"(?<![\d'′])(\d+),\1(?![\d'′])")
_SPACED_PARENT = re.compile(r"(?<=[a-z\d\)\]])\s+(?=[a-z][a-z]+ic acid\b)")


class ParsedName(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str  # the name as given
    parsed: str  # the spelling OPSIN read
    structure: Structure


class Resolution(BaseModel):
    model_config = ConfigDict(frozen=True)
    structure: Structure | None
    agreeing: tuple[str, ...] = ()  # the given names that parse to the chosen structure
    parsed: tuple[ParsedName, ...] = ()  # every name that parsed, to any structure


def variants(name: str) -> tuple[str, ...]:
    """Spellings of one name worth giving OPSIN, the name itself first (but a ring assembly
    with its primes restored before it).

    >>> variants("5-ethoxy isophthalic acid (5-EIA)")
    ('5-ethoxy isophthalic acid (5-EIA)', '5-ethoxy isophthalic acid', '5-ethoxyisophthalic acid')
    >>> variants("(2,4,6-trimethylbenzene)-1,3,5-triacetic acid")[-1]
    '2,4,6-trimethylbenzene-1,3,5-triacetic acid'
    >>> variants("1,4-bi(1H-pyrazol-4-yl)benzene")[-1]
    '1,4-bis(1H-pyrazol-4-yl)benzene'
    >>> variants("2,2-bipyridine-5,5-dicarboxylic acid")[0]
    "2,2'-bipyridine-5,5'-dicarboxylic acid"
    >>> variants("H2BDC")
    ('H2BDC', 'terephthalic acid')
    """
    found = [name.strip(), *expansions(name)]
    if _ASSEMBLY.search(name) and _UNPRIMED_PAIR.search(name):
        found.insert(0, _UNPRIMED_PAIR.sub(r"\1,\1'", name.strip()))
    bare = _TRAILING_ABBREVIATION.sub("", name).strip()
    found.append(bare)
    found.append(_SPACED_PARENT.sub("", bare))
    found.append(_BRACKETED_LEAD.sub(r"\1-", bare))
    found.append(_BI_BRACKET.sub("bis", bare))
    return tuple(dict.fromkeys(v for v in found if v))


def parse_name(opsin: Opsin, name: str) -> ParsedName | None:
    for spelling in variants(name):
        smiles = opsin.smiles(spelling)
        structure = describe(smiles) if smiles else None
        if structure is not None:
            return ParsedName(name=name, parsed=spelling, structure=structure)
    return None


def resolve(opsin: Opsin, names: list[str] | tuple[str, ...]) -> Resolution:
    """The structure the given names agree on (see the module text), or none."""
    parsed = tuple(p for n in dict.fromkeys(names) if (p := parse_name(opsin, n)) is not None)
    if not parsed:
        return Resolution(structure=None)
    votes = Counter(p.structure.inchikey for p in parsed)
    primes = {p.structure.inchikey: 0 for p in parsed}
    for p in parsed:
        primes[p.structure.inchikey] = max(primes[p.structure.inchikey],
                                           sum(p.name.count(c) for c in PRIMES))
    key = max(votes, key=lambda k: (votes[k], primes[k]))
    chosen = next(p.structure for p in parsed if p.structure.inchikey == key)
    return Resolution(structure=chosen, parsed=parsed,
                      agreeing=tuple(p.name for p in parsed if p.structure.inchikey == key))
