"""Data ranges of datatype properties: facet-restricted datatypes and enumerated literals."""

from __future__ import annotations

import pyoxigraph as ox

from kgctl.ontology.graph import OWL, RDFS, XSD, Key, TBoxGraph, is_blank, key

FACETS = ("minInclusive", "maxInclusive", "minExclusive", "maxExclusive", "pattern", "length",
          "minLength", "maxLength", "totalDigits", "fractionDigits")


def restricted_datatype(graph: TBoxGraph, node: Key, facets: dict[str, str]) -> str | None:
    """Base datatype of a facet-restricted data range (blank, or a named rdfs:Datatype defined
    by one), collecting its facets; None for anything else."""
    exprs = [node] if is_blank(node) else [node, *graph.object_keys(node, OWL + "equivalentClass")]
    for expr in exprs:
        base = graph.named(expr, OWL + "onDatatype")
        if not base:
            continue
        for head in graph.object_keys(expr, OWL + "withRestrictions"):
            for item in graph.rdf_list(head):
                if isinstance(item, ox.Literal):
                    continue
                for facet in FACETS:
                    for value in graph.literals(key(item), XSD + facet):
                        facets[facet] = value.value
        return base[0]
    return None


def is_datatype_expr(graph: TBoxGraph, iri: str) -> bool:
    return RDFS + "Datatype" in graph.types(iri) and not iri.startswith(XSD)


def literal_types(graph: TBoxGraph, node: Key) -> set[str]:
    """Datatypes of the literals of an enumerated data range ``[ owl:oneOf ("a" "b") ]``."""
    return {
        t.datatype.value
        for head in graph.object_keys(node, OWL + "oneOf")
        for t in graph.rdf_list(head)
        if isinstance(t, ox.Literal)
    }
