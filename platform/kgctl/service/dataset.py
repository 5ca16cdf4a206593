"""The data the service answers from: one pyoxigraph store this process owns.

The service needs SPARQL 1.1 Protocol dataset selection (several default graphs, a restricted
set of named graphs), which the per-paper GraphStore contract does not offer, so it holds the
pyoxigraph store itself. Writes come one at a time (the writer process), each atomic.

>>> from pyoxigraph import Store
>>> data = Dataset(Store())
>>> data.update('INSERT DATA { GRAPH <https://w3id.org/kgctl/paper/p1> { <urn:a> <urn:b> "c" } }')
>>> [(p.paper, p.triples) for p in data.papers()]
[('p1', 1)]
>>> [s["o"].value for s in data.query("SELECT ?o { ?s ?p ?o }", union=True)]
['c']
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pyoxigraph import DefaultGraph, NamedNode, Quad, RdfFormat, Store, parse

from kgctl.errors import DataRejected, InputError, StoreError
from kgctl.store.base import QueryResult
from kgctl.store.embedded import check_store_folder
from kgctl.store.iris import graph_iri, paper_of_graph
from kgctl.store.views import merged_graph_iri, view_graphs

GRAPH_SIZES = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"


class PaperInfo(BaseModel):
    """One paper graph as listed by the service's paper browser."""

    model_config = ConfigDict(frozen=True)
    paper: str
    graph: str
    triples: int
    merged_graph: str | None  # the identities of its entities, once merged (store.merged)


class Dataset:
    """Queries with protocol dataset options, atomic updates, graph listing and export."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._views: dict[str, list[NamedNode] | None] = {}  # the graphs each view shows

    @classmethod
    def open(cls, path: Path) -> Dataset:
        """Open (and own: RocksDB allows one process) the store directory at `path`."""
        if not path.is_dir():
            raise InputError(f"no store directory at {path}")
        check_store_folder(path)
        try:
            return cls(Store(str(path)))
        except OSError as exc:
            if "lock" in str(exc).lower():
                raise StoreError(f"another process holds the store at {path}; stop it, or "
                                 "point that process at this service's endpoint") from None
            raise StoreError(f"cannot open the store at {path}: {exc}") from None

    def query(self, sparql: str, *, default_graphs: Sequence[NamedNode] = (),
              named_graphs: Sequence[NamedNode] = (), union: bool = False,
              base_iri: str | None = None, view: str | None = None) -> QueryResult:
        """Run a query; explicit default graphs win over `union`. SyntaxError on a bad query.
        Without explicit graphs, `view` (store.views) limits the named graphs and the union."""
        if view is not None and not default_graphs and not named_graphs:
            shown = self._view(view)
            if shown is not None:
                named_graphs = shown
                default_graphs = shown if union else ()
        options: dict = {"base_iri": base_iri}
        if default_graphs:
            options["default_graph"] = list(default_graphs)
        else:
            options["use_default_graph_as_union"] = union
        if named_graphs:
            options["named_graphs"] = list(named_graphs)
        return self._store.query(sparql, **options)

    def _view(self, view: str) -> list[NamedNode] | None:
        """The named graphs `view` shows (None: all), listed once until the next write."""
        if view not in self._views:
            shown = view_graphs((g.value for g in self._store.named_graphs()
                                 if isinstance(g, NamedNode)), view)
            self._views[view] = None if shown is None else [NamedNode(g) for g in shown]
        return self._views[view]

    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """One SPARQL Update, applied atomically (SyntaxError on a bad update)."""
        self._views.clear()
        try:
            self._store.update(sparql, base_iri=base_iri)
        except OSError as exc:
            raise StoreError(f"update failed, nothing written: {exc}") from None
        except RuntimeError as exc:  # it asks what cannot be done: CLEAR of a missing graph
            raise DataRejected(f"update failed, nothing written: {exc}") from None

    def backup(self, target: Path) -> None:
        """A consistent copy of the store in the new directory `target` (hard links; writes
        may go on meanwhile)."""
        self._store.backup(str(target))

    def put_graph(self, graph: NamedNode | DefaultGraph,
                  documents: Sequence[tuple[RdfFormat, bytes]], *, base_iri: str,
                  replace: bool) -> bool:
        """Graph Store Protocol PUT (`replace`) or POST: parse the documents into `graph`, then
        write; True when the graph was new. SyntaxError on bad data (nothing is written)."""
        quads = [Quad(q.subject, q.predicate, q.object, graph) for fmt, data in documents
                 for q in parse(data, format=fmt, base_iri=base_iri, without_named_graphs=True)]
        self._views.clear()
        created = not self.has_graph(graph)
        if replace and not created:
            self._store.clear_graph(graph)
        self._store.extend(quads)
        if isinstance(graph, NamedNode):
            self._store.add_graph(graph)
        return created

    def delete_graph(self, graph: NamedNode | DefaultGraph) -> bool:
        """Graph Store Protocol DELETE: False when there was no such graph."""
        self._views.clear()
        if isinstance(graph, DefaultGraph):
            self._store.clear_graph(graph)
        elif self._store.contains_named_graph(graph):
            self._store.remove_graph(graph)
        else:
            return False
        return True

    def papers(self) -> list[PaperInfo]:
        sizes = {row["g"].value: int(row["n"].value) for row in self._store.query(GRAPH_SIZES)}
        infos = []
        for p in sorted(p for g in sizes if (p := paper_of_graph(g)) is not None):
            graph, merged = graph_iri(p).value, merged_graph_iri(p).value
            infos.append(PaperInfo(paper=p, graph=graph, triples=sizes[graph],
                                   merged_graph=merged if merged in sizes else None))
        return infos

    def has_graph(self, graph: NamedNode | DefaultGraph) -> bool:
        return isinstance(graph, DefaultGraph) or self._store.contains_named_graph(graph)

    def graph_quads(self, graph: NamedNode | DefaultGraph) -> Iterator[Quad]:
        return self._store.quads_for_pattern(None, None, None, graph)

    def load(self, quads: Sequence[Quad], *, replace: bool = False) -> None:
        """Add quads in one transaction (used to build demo and benchmark stores); with
        `replace`, the graphs they belong to are emptied first (seeding twice is idempotent)."""
        self._views.clear()
        if replace:
            for graph in {q.graph_name for q in quads}:
                if isinstance(graph, NamedNode) and self._store.contains_named_graph(graph):
                    self._store.remove_graph(graph)
        self._store.extend(quads)
