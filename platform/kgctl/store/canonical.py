"""Canonical text of a paper: sorted N-Quads after RDF canonicalisation (RDFC-1.0), so two
stores holding the same paper compare byte for byte. Other boxes use it in their tests.

>>> from pyoxigraph import Literal, NamedNode, Triple
>>> from kgctl.store.embedded import EmbeddedStore
>>> store = EmbeddedStore()
>>> _ = store.write("p1", insert=[Triple(NamedNode("http://a"), NamedNode("http://p"),
...                                      Literal("x"))])
>>> print(canonical_nquads(store, "p1"), end="")
<http://a> <http://p> "x" <https://w3id.org/kgctl/paper/p1> .
"""

from __future__ import annotations

from pyoxigraph import CanonicalizationAlgorithm, Dataset, Quad, RdfFormat, parse

from kgctl.store.base import GraphStore
from kgctl.store.iris import graph_iri


def canonical_text(quads: list[Quad]) -> str:
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
