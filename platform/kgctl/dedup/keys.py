"""Pure normalisers for deduplication keys and labels.

>>> name_key("N, N-Dimethyl thing") == name_key("n,n-dimethyl thing")
True
>>> name_key("1,2-Station road") == name_key("1,3-Station road")
False
>>> locant_signature("sensor (II) B") == locant_signature("sensor (I) B")
False
>>> locant_signature("sample hydrate") == locant_signature("sample trihydrate")
False
>>> is_fragment("[(A2)(B3)]"), is_fragment("AB3")
(True, False)
>>> NORMALISERS["digits"]("No. 1528352") == NORMALISERS["digits"]("1528352")
True
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2212\u00ad"), "-")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_ROMAN_STATE = re.compile(r"\(([IVX]+|[0-9]?[+-])\)", re.IGNORECASE)
_HYDRATION = re.compile(
    r"\b(?:mono|di|tri|tetra|penta|hexa|hepta|octa|nona|deca|)hydrate\b|anhydrous", re.IGNORECASE)
_FRAGMENT = re.compile(r"^\[.*\]$")


def clean_text(text: str) -> str:
    """NFKC, unified dashes and subscripts, collapsed whitespace (case kept)."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_SUBSCRIPTS)
    return " ".join(text.split())


@lru_cache(maxsize=1 << 18)  # names repeat across papers: normalise each spelling once
def name_key(label: str) -> str:
    """Exact-match key of a name: case-folded, spacing after commas and around dashes removed;
    numbers, primes, charges and brackets are kept (they tell entities apart)."""
    text = clean_text(label).casefold()
    text = re.sub(r"\s*([,\-])\s*", r"\1", text)
    return text


@lru_cache(maxsize=1 << 18)  # a name is compared with many others
def locant_signature(label: str) -> tuple[str, ...]:
    """Digits and bracketed states of a name: two names that differ here are different entities
    however similar the rest of the spelling is."""
    text = clean_text(label)
    states = tuple(m.group(1).upper() for m in _ROMAN_STATE.finditer(text))
    digits = tuple(re.findall(r"\d+", _ROMAN_STATE.sub("", text)))
    primes = ("'",) * text.count("'") + ("′",) * text.count("′")
    hydration = tuple(m.group(0).lower() for m in _HYDRATION.finditer(text))
    return (*states, "|", *digits, "|", *primes, "|", *hydration)


def is_fragment(label: str) -> bool:
    """A wholly bracketed label such as "[A2]" (a fragment notation): many entities share it, so
    it is not evidence that two mentions are the same."""
    return bool(_FRAGMENT.match(clean_text(label)))


# key normalisers by name (a dedup spec's `normalise:`); a domain pack adds its own with the
# hook `dedup_keys` (a mapping of the same shape)
NORMALISERS = {
    "iri": lambda text: text.strip() or None,
    "text": lambda text: name_key(text) or None,
    "digits": lambda text: re.sub(r"\D", "", text) or None,
}
