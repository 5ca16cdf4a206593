"""A short human-readable summary of an IR (what ``kgctl compile`` prints).

>>> from kgctl.ontology import pack_ir
>>> lines = summary_lines(pack_ir("nerre-doping"))
>>> lines[0]
'ontologies: doping.ttl'
"""

from __future__ import annotations

from kgctl.ontology.ir import OntologyIR


def summary_lines(ir: OntologyIR) -> list[str]:
    declared = [c for c in ir.classes.values() if not c.external]
    kinds = {
        k: sum(p.kind == k for p in ir.properties.values())
        for k in ("object", "datatype", "annotation")
    }
    lines = [
        f"ontologies: {', '.join(ir.ontologies)}",
        f"classes: {len(declared)} declared, {len(ir.classes) - len(declared)} external, "
        f"{sum(c.abstract for c in declared)} abstract, "
        f"{sum(c.identity == 'label' and c.key is None for c in declared)} identified by label, "
        f"{sum(c.key is not None for c in declared)} by a key property",
        f"properties: {len(ir.properties)} "
        f"({kinds['object']} object, {kinds['datatype']} datatype, "
        f"{kinds['annotation']} annotation)",
        f"rules: {len(ir.restrictions)} restrictions, "
        f"{len(ir.cardinalities)} merged cardinalities, "
        f"{len(ir.enumerations)} enumerations, {len(ir.orderings)} orderings",
        f"quantity kinds: {len(ir.quantities)}; units: {len(ir.units)}; "
        f"unit spellings: {len(ir.unit_aliases) + len(ir.unit_spellings)}",
    ]
    for top in ir.top_level:
        lines.extend(_top_level_lines(ir, top))
    return lines


def _top_level_lines(ir: OntologyIR, top: str) -> list[str]:
    props = ir.properties_of(top)
    required = [ir.curie(p.iri) for p in props if ir.cardinality(top, p.iri).min > 0]
    lines = [
        f"top level {ir.curie(top)}: {len(props)} properties; "
        f"required: {', '.join(required) or 'none'}",
    ]
    for rule in ir.orderings:
        if rule.container_class == top:
            members = ir.properties[rule.member_property].range
            kinds = [
                ir.curie(c) for m in members for c in ir.subclasses(m) if not ir.classes[c].abstract
            ]
            lines.append(
                f"  ordered members via {ir.curie(rule.member_property)} "
                f"({ir.curie(rule.order_property)} {rule.start}..N"
                f"{', contiguous' if rule.contiguous else ''}): {', '.join(kinds)}"
            )
    return lines
