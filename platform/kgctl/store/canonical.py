"""Canonical text of a paper: sorted N-Quads after RDF canonicalisation (RDFC-1.0), with
numbers, booleans and times in one lexical form per value (stores keep different ones:
Oxigraph reads ``"60"^^xsd:double`` where Virtuoso reads ``"60.0"``, booleans ``1``), so two stores
holding the same paper compare byte for byte. Other boxes use it in their tests.

>>> from pyoxigraph import NamedNode
>>> by_value(Literal("60.0", datatype=NamedNode(XSD + "double"))).value
'60'
>>> by_value(Literal("1", datatype=NamedNode(XSD + "boolean"))).value
'true'
>>> by_value(Literal("2024-01-01T10:00:00.500Z", datatype=NamedNode(XSD + "dateTime"))).value
'2024-01-01T10:00:00.5Z'

>>> from pyoxigraph import Literal, NamedNode, Triple
>>> from kgctl.store.embedded import EmbeddedStore
>>> store = EmbeddedStore()
>>> _ = store.write("p1", insert=[Triple(NamedNode("http://a"), NamedNode("http://p"),
...                                      Literal("x"))])
>>> print(canonical_nquads(store, "p1"), end="")
<http://a> <http://p> "x" <https://w3id.org/kgctl/paper/p1> .
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from pyoxigraph import (
    CanonicalizationAlgorithm,
    Dataset,
    Literal,
    Quad,
    RdfFormat,
    parse,
)

from kgctl.store.base import GraphStore, Term
from kgctl.store.iris import graph_iri

XSD = "http://www.w3.org/2001/XMLSchema#"
_FRACTION_ZEROS = re.compile(r"(\.\d*?)0+(?=Z|[+-]\d\d:\d\d|$)")
_EMPTY_FRACTION = re.compile(r"\.(?=Z|[+-]\d\d:\d\d|$)")
_INTEGERS = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                               "positiveInteger", "negativeInteger", "nonPositiveInteger")}


def by_value(term: Term) -> Term:
    """A number or boolean literal in the one lexical form of its value; other terms as they are."""
    if not isinstance(term, Literal):
        return term
    kind, text = term.datatype.value, term.value.strip()
    try:
        if kind in (XSD + "double", XSD + "float"):
            return Literal(Literal(float(text)).value, datatype=term.datatype)
        if kind in _INTEGERS:
            return Literal(str(int(text)), datatype=term.datatype)
        if kind == XSD + "decimal":
            return Literal(format(Decimal(text).normalize(), "f"), datatype=term.datatype)
        if kind == XSD + "boolean":
            return Literal(text in ("true", "1"))
        if kind == XSD + "dateTime":  # "…:23.070Z" and "…:23.07Z" are one instant
            return Literal(_EMPTY_FRACTION.sub("", _FRACTION_ZEROS.sub(r"\1", text)),
                           datatype=term.datatype)
    except (ValueError, InvalidOperation):
        return term
    return term


def canonical_text(quads: list[Quad]) -> str:
    quads = [Quad(q.subject, q.predicate, by_value(q.object), q.graph_name) for q in quads]
    dataset = Dataset(quads)
    dataset.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    return "".join(sorted(f"{q} .\n" for q in dataset))


def canonical_nquads(store: GraphStore, paper_id: str, *, provenance: bool = False) -> str:
    """The paper's graph (and with `provenance` its provenance graph) as canonical N-Quads."""
    if provenance:
        data = store.export(paper_id=paper_id, format=RdfFormat.N_QUADS)
        return canonical_text(list(parse(data, format=RdfFormat.N_QUADS)))
    graph = graph_iri(paper_id)
    return canonical_text([Quad(t.subject, t.predicate, t.object, graph)
                           for t in store.triples(paper_id)])
