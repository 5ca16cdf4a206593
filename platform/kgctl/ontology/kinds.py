"""Which kinds of axiom a compiled T-Box states, and which of them kgctl enforces.

A kind is enforced when a tool call that breaks it is refused with a finding code; it is only
present when the T-Box states it but nothing written through the tools could break or satisfy
it (a restriction on a property no loaded T-Box declares, a minimum on an inverse property,
disjointness of classes when every entity has one class).

>>> from kgctl.ontology import default_ir
>>> present, enforced = axiom_kinds(default_ir())
>>> sorted(enforced), sorted(present - enforced)
(['datatype', 'domain/range'], ['minCardinality'])
"""

from __future__ import annotations

from collections import Counter

from kgctl.ontology.ir import OntologyIR, Restriction
from kgctl.ontology.rules import UNIVERSAL_FILLERS

XSD = "http://www.w3.org/2001/XMLSchema#"
_RESTRICTION_KINDS = {"some": "someValuesFrom", "all": "allValuesFrom", "has_value": "hasValue",
                      "min": "minCardinality", "max": "maxCardinality",
                      "exact": "exactCardinality"}
# the finding codes a refusal of each kind carries
CODES: dict[str, tuple[str, ...]] = {
    "domain/range": ("type_mismatch",),
    "datatype": ("datatype", "range"),
    "facet": ("datatype", "range"),
    "oneOf": ("enum_value",),
    "functional": ("max_one",),
    "someValuesFrom": ("required_missing", "type_mismatch"),
    "allValuesFrom": ("type_mismatch", "datatype"),
    "hasValue": ("enum_value",),
    "minCardinality": ("required_missing", "cardinality"),
    "maxCardinality": ("max_one", "cardinality", "unknown_argument"),
    "exactCardinality": ("required_missing", "max_one", "cardinality"),
    "inverse": ("type_mismatch", "cardinality"),
}


def axiom_kinds(ir: OntologyIR) -> tuple[Counter[str], Counter[str]]:
    """(present, enforced): axioms per kind stated by the T-Boxes, and those enforced."""
    present: Counter[str] = Counter()
    enforced: Counter[str] = Counter()

    def count(kind: str, checked: bool) -> None:
        present[kind] += 1
        if checked:
            enforced[kind] += 1

    for prop in ir.properties.values():
        if prop.kind == "annotation":
            continue
        if prop.domain or prop.range:
            count("domain/range", True)
        if prop.kind == "datatype" and any(r.startswith(XSD) and r != XSD + "string"
                                           for r in prop.range):
            count("datatype", True)
        if prop.facets:
            count("facet", True)
        if prop.functional:
            count("functional", True)
    for enum in ir.enumerations:
        if enum.source.kind == "owl":
            count("oneOf", True)
    for rule in ir.restrictions:
        if rule.source.kind == "owl":
            kind = "inverse" if rule.inverse else _RESTRICTION_KINDS[rule.kind]
            count(kind, _enforced(ir, rule))
    for info in ir.classes.values():
        if info.disjoint_with and not info.external:
            count("disjointWith", False)
    return present, enforced


def _enforced(ir: OntologyIR, rule: Restriction) -> bool:
    prop = ir.properties.get(rule.on_property)
    if prop is None or prop.kind == "annotation":
        return False
    if rule.inverse:
        return rule.kind in ("all", "max", "exact")
    if rule.kind in ("some", "min", "exact"):
        return satisfiable(ir, rule.filler)
    return True


def satisfiable(ir: OntologyIR, filler: str | None) -> bool:
    """Whether a value of `filler` can be written at all: a datatype, a class with a loaded
    (not external) sub-class, or one with named individuals. A minimum on a class declared in
    no loaded T-Box (bibo:Document) is listed, not enforced."""
    if filler is None or filler.startswith(XSD) or filler in UNIVERSAL_FILLERS:
        return True
    return any(not ir.classes[c].external for c in ir.subclasses(filler)) or any(
        filler in i.types for i in ir.individuals.values())
