"""Quantity kinds, their allowed units, and the unit spelling table.

A profile says which unit category each quantity class uses (e.g. om-2:Temperature ->
om-2:TemperatureUnit); the units are the individuals of that category in the T-Box. An alias
table ``<stem>_unit_aliases.json`` beside a T-Box maps source spellings to unit local names.

>>> split_aliases({"mM": "u:mM", "mm": "u:mm", "Hz": "u:Hz"})
({'hz': 'u:Hz', 'mm': 'u:mm'}, {'Hz': 'u:Hz', 'mM': 'u:mM'})
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kgctl.errors import OntologyError
from kgctl.ontology.graph import RDFS, TBoxGraph
from kgctl.ontology.ir import ClassInfo, QuantityKind, Unit, UnitAlias
from kgctl.ontology.owl import local_name
from kgctl.ontology.profile import Profile

ALIAS_SUFFIX = "_unit_aliases.json"


def aliases_beside(tbox: Path) -> Path:
    """``om2_unit_aliases.json`` for ``om2.ttl``."""
    return tbox.with_name(tbox.stem + ALIAS_SUFFIX)


def quantity_kinds(
    graph: TBoxGraph, classes: dict[str, ClassInfo], profiles: Sequence[Profile]
) -> tuple[dict[str, QuantityKind], dict[str, Unit]]:
    """Quantity kinds named by the profiles, with the unit individuals of their categories."""
    kinds: dict[str, QuantityKind] = {}
    units: dict[str, Unit] = {}
    for profile in profiles:
        for entry in profile.quantities:
            members = _units_of(graph, classes, entry.unit_category)
            if not members:
                raise OntologyError(
                    f"{entry.source}: unit category {local_name(entry.unit_category)}"
                    " has no unit individuals in the loaded T-Boxes"
                )
            units.update((u.iri, u) for u in members)
            kinds[entry.quantity] = QuantityKind(
                iri=entry.quantity,
                label=classes[entry.quantity].label,
                unit_category=entry.unit_category,
                units=tuple(u.iri for u in members),
                value_property=entry.value_property,
                unit_property=entry.unit_property,
                minimum=entry.minimum,
                source=entry.source,
            )
    return dict(sorted(kinds.items())), dict(sorted(units.items()))


def read_aliases(path: Path, graph: TBoxGraph, units: dict[str, Unit]) -> dict[str, str]:
    """Spelling -> unit IRI for the units in use; a target the T-Boxes never mention is an
    error (a stale table), a known unit outside every quantity kind is simply not offered."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        namespace, table = data.get("namespace", ""), data["aliases"]
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise OntologyError(f"{path.name}: not a unit alias table: {exc}") from None
    out = {}
    for spelling, target in sorted(table.items()):
        iri = target if "://" in target else namespace + target
        if not graph.types(iri):
            raise OntologyError(f"{path.name}: alias {spelling!r} names unknown unit {iri}")
        if iri in units:
            out[spelling] = iri
    return out


def profile_aliases(
    profiles: Sequence[Profile], spellings: dict[str, str], units: dict[str, Unit]
) -> tuple[dict[str, str], tuple[UnitAlias, ...]]:
    """The alias-file spellings plus those the profiles add. A profile alias must name a unit
    of some quantity kind and may not send a spelling of the alias file to another unit."""
    merged = dict(spellings)
    added = []
    for profile in profiles:
        for alias in profile.unit_aliases:
            if alias.unit not in units:
                raise OntologyError(f"{alias.source}: unit alias {alias.spelling!r} names "
                                    f"{local_name(alias.unit)}, not a unit of any quantity kind")
            earlier = merged.setdefault(alias.spelling, alias.unit)
            if earlier != alias.unit:
                raise OntologyError(f"{alias.source}: unit alias {alias.spelling!r} already "
                                    f"means {local_name(earlier)}")
            added.append(alias)
    return merged, tuple(sorted(added, key=lambda a: a.spelling))


def split_aliases(spellings: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(lower-cased spelling -> IRI, case-sensitive spelling -> IRI). On a lower-case clash the
    spelling that is already lower case wins ("mm" is millimetre; "mM" stays case-sensitive)."""
    folded: dict[str, str] = {}
    cased: dict[str, str] = {}
    for spelling, iri in sorted(spellings.items()):
        low = spelling.lower()
        if spelling != low:
            cased[spelling] = iri
        if spelling == low or low not in folded:
            folded[low] = iri
    return dict(sorted(folded.items())), dict(sorted(cased.items()))


def _units_of(graph: TBoxGraph, classes: dict[str, ClassInfo], category: str) -> list[Unit]:
    below = {c for c, info in classes.items() if c == category or category in info.ancestors}
    found = []
    for subject in graph.subjects_of_type(*below):
        typed = sorted(graph.types(subject) & below)
        if subject not in classes:
            found.append(
                Unit(
                    iri=subject,
                    name=local_name(subject),
                    label=graph.literal(subject, RDFS + "label") or local_name(subject),
                    category=typed[0],
                )
            )
    return sorted(found, key=lambda u: u.iri)
