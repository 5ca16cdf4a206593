"""Pure naming rules: ontology local names -> snake_case tool and argument names.

>>> snake("HeatChill"), snake("HNMRData"), snake("hasCBUFormula")
('heat_chill', 'hnmr_data', 'has_cbu_formula')
>>> arg_name("hasTargetTemperature"), arg_name("isSealed"), arg_name("usesEquipment")
('target_temperature', 'is_sealed', 'uses_equipment')
>>> local_name("http://www.w3.org/2002/07/owl#sameAs")
'sameAs'
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")
# property-name prefixes that say nothing an argument name needs ("hasOrder" -> "order")
_DROPPED_PREFIXES = ("has",)


def local_name(iri: str) -> str:
    """The part of an IRI after its last ``/`` or ``#``."""
    return re.split(r"[/#]", iri.rstrip("/#"))[-1]


def snake(name: str) -> str:
    """snake_case of a camelCase or PascalCase name (acronyms kept together)."""
    words = _BOUNDARY.sub("_", name)
    return _NON_WORD.sub("_", words).strip("_").lower()


def arg_name(property_name: str) -> str:
    """Argument name of a property: snake_case without a leading ``has``."""
    text = snake(property_name)
    for prefix in _DROPPED_PREFIXES:
        if text.startswith(prefix + "_") and len(text) > len(prefix) + 1:
            return text[len(prefix) + 1:]
    return text


# local names that say nothing to a reader: OBO ids (IAO_0000032), UUID-style ids
# (battery_8bf2b3ac_..., EMMO_...), bare numbers
_OPAQUE = re.compile(r"^[A-Za-z]{1,12}[_:]?\d{4,}$|[0-9a-fA-F]{8}[_-][0-9a-fA-F]{4}[_-]|^\d+$")


def is_opaque(name: str) -> bool:
    """Whether a local name is an identifier rather than a word.

    >>> is_opaque("IAO_0000032"), is_opaque("battery_8bf2b3ac_1f2c_4a4f_bc8f_a2e2b12b18a5")
    (True, True)
    >>> is_opaque("HeatChill"), is_opaque("hasPart")
    (False, False)
    """
    return bool(_OPAQUE.search(name))


def readable(local: str, label: str) -> str:
    """The word a tool or argument name is made of: the local name when it is readable, else
    the label (rdfs:label / skos:prefLabel).

    >>> readable("IAO_0000032", "scalar measurement datum"), readable("Pizza", "Pizza")
    ('scalar measurement datum', 'Pizza')
    """
    return label if is_opaque(local) and label and not is_opaque(label) else local
