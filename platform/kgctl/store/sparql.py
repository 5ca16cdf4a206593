"""The one way values enter SPARQL text: RDF terms serialised by ``term_to_sparql``.

>>> from pyoxigraph import Literal, NamedNode
>>> term_to_sparql(Literal('say "hi" } # \\\\ ok'))
'"say \\\\"hi\\\\" } # \\\\\\\\ ok"'
>>> term_to_sparql(NamedNode("https://example.org/a"))
'<https://example.org/a>'
>>> term_to_sparql("not a term")
Traceback (most recent call last):
...
kgctl.errors.InputError: only RDF terms can enter SPARQL, got str
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Triple

from kgctl.errors import InputError
from kgctl.store.bindings import inject_values

__all__ = ["term_to_sparql", "quads_block", "data_update", "bind", "inject_values"]


def term_to_sparql(term: NamedNode | BlankNode | Literal) -> str:
    """SPARQL form of an RDF term; pyoxigraph escapes quotes, backslashes and control
    characters exactly as N-Triples/SPARQL require, so the text cannot break out of the term."""
    if not isinstance(term, NamedNode | BlankNode | Literal):
        raise InputError(f"only RDF terms can enter SPARQL, got {type(term).__name__}")
    return str(term)


def _triple_text(triple: Triple) -> str:
    return " ".join(term_to_sparql(t) for t in (triple.subject, triple.predicate, triple.object))


def quads_block(quads: Iterable[Quad]) -> str:
    """``GRAPH <g> { s p o . ... }`` blocks for INSERT DATA / DELETE DATA, grouped by graph
    (default-graph triples stand alone)."""
    by_graph: dict[str | None, list[str]] = {}
    for quad in quads:
        graph = None if isinstance(quad.graph_name, DefaultGraph) else quad.graph_name
        key = None if graph is None else term_to_sparql(graph)
        by_graph.setdefault(key, []).append(_triple_text(quad.triple))
    return " ".join(
        " . ".join(lines) + " ." if graph is None else f"GRAPH {graph} {{ {' . '.join(lines)} }}"
        for graph, lines in by_graph.items()
    )


def data_update(*, delete: Iterable[Quad] = (), insert: Iterable[Quad] = (),
                drop: Iterable[NamedNode] = ()) -> str:
    """One SPARQL Update request (applied as one transaction): drop graphs, delete, insert."""
    operations = [f"DROP SILENT GRAPH {term_to_sparql(g)}" for g in drop]
    deleted, inserted = quads_block(delete), quads_block(insert)
    if deleted:
        operations.append(f"DELETE DATA {{ {deleted} }}")
    if inserted:
        operations.append(f"INSERT DATA {{ {inserted} }}")
    return " ;\n".join(operations)


def bind(sparql: str, bindings: Mapping[str, NamedNode | BlankNode | Literal] | None) -> str:
    """Query text with `bindings` applied as a VALUES block (for endpoints without SEP-0007)."""
    if not bindings:
        return sparql
    for name, term in bindings.items():
        if isinstance(term, BlankNode):
            raise InputError(f"binding ?{name}: a blank node cannot be bound in a remote query")
    return inject_values(sparql, {k: term_to_sparql(v) for k, v in bindings.items()})
