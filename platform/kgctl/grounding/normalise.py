"""Name normalisation and identifier formatting: the generic rules, and the `Naming` a domain
pack may replace (its ``naming`` hook) with rules that know its vocabulary.

The generic rules remove spelling noise only: Unicode forms, case, whitespace, dash and quote
variants, accents and bracket shapes. Identifier values are kept as written (trimmed); which
identifier kinds exist is whatever the grounding spec declares.

>>> normalise_name("  Café  Crème ‐ [Grand] ")
'cafe creme - (grand)'
>>> protected_signature("route 66 (2+)"), GENERIC.canonical("isbn", " 978-3 ")
('2 66', '978-3')
>>> squeeze("(+-)-trans-2-phenyl cyclopropanamine"), skeleton("bromo(nitro)methane")
('(+-)trans2phenylcyclopropanamine', 'bromonitromethane')
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from types import MappingProxyType
from typing import NamedTuple

from kgctl.packs import resolve_hook

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"), "-")
_PRIMES = dict.fromkeys(map(ord, "\u2018\u2019\u2032\u00b4\u0060\u201b"), "'")
_DOUBLE_PRIMES = dict.fromkeys(map(ord, "\u2033\u201c\u201d"), "''")
_BRACKETS = {ord("["): "(", ord("]"): ")", ord("{"): "(", ord("}"): ")"}
_SIGNED = re.compile(r"\([^()]*[+-]\)")  # "(-)", "(+-)", "(2-)": signs, not dashes
_NUMBERS = re.compile(r"\d+")


class Naming(NamedTuple):
    """How one domain spells names and identifiers (the matcher and the index use one)."""

    normalise: Callable[[str], str]  # canonical spelling for exact matching
    signature: Callable[[str], str]  # parts of a normalised name fuzzy matching must keep
    canonical: Callable[[str, str], str | None]  # (kind, value) -> canonical value or None
    identifiers_in: Callable[[str], dict[str, str]]  # identifier kinds a free-text name is
    parent: Callable[[str], str | None]  # a broader name to try when a name matches nothing
    decisive: Callable[[str, str], bool]  # whether one entity with (kind, value) is proof
    kinds: tuple[str, ...] = ()  # identifier kinds `canonical` recognises (for inspect)
    weights: Mapping[str, int] = MappingProxyType({})  # vote weight per identifier kind


@lru_cache(maxsize=65536)
def normalise_name(name: str) -> str:
    """Generic canonical spelling of a name (see module doctest)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    if not text.isascii():
        text = text.translate(_DASHES).translate(_DOUBLE_PRIMES).translate(_PRIMES)
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(text.translate(_BRACKETS).split()).strip(" ;,")


def protected_signature(normalised: str) -> str:
    """The numbers of a normalised name, as a sorted multiset: names with different numbers
    never match by fuzzy similarity."""
    return " ".join(sorted(_NUMBERS.findall(normalised)))


def _canonical(kind: str, value: str) -> str | None:
    value = unicodedata.normalize("NFKC", value).strip()
    return value or None


GENERIC = Naming(normalise=normalise_name, signature=protected_signature, canonical=_canonical,
                 identifiers_in=lambda name: {}, parent=lambda name: None,
                 decisive=lambda kind, value: True)


@cache
def naming_of(target: str | None) -> Naming:
    """The Naming a hook target ("module:attribute") names; the generic one for None."""
    return GENERIC if target is None else resolve_hook(target, where="naming")


def squeeze(normalised: str) -> str:
    """Coarser key: a normalised name without spaces and hyphens (spacing/dash variants).

    >>> squeeze("(+)-trans-2-x"), squeeze("a (2-) b")
    ('(+)trans2x', 'a(2-)b')
    """
    return _strip(normalised, " -")


def skeleton(normalised: str) -> str:
    """The fuzzy tier's form: also without round brackets, which are often optional around a
    part of a name. Bracketed signs and charges stay.

    >>> skeleton("(-)-x"), skeleton("y(2+)")
    ('(-)x', 'y(2+)')
    """
    return _strip(normalised, " -()")


def _strip(text: str, chars: str) -> str:
    """`text` without `chars`, except inside a bracketed sign or charge ("(+-)", "(2-)")."""
    table = str.maketrans("", "", chars)
    if "-)" not in text and "+)" not in text:
        return text.translate(table)
    parts, last = [], 0
    for match in _SIGNED.finditer(text):
        parts += [text[last:match.start()].translate(table), match.group(0)]
        last = match.end()
    return "".join([*parts, text[last:].translate(table)])
