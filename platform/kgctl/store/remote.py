"""The remote backend: any SPARQL 1.1 Query + Update endpoint, tested on the Oxigraph server
and Virtuoso 7 (docs/store.md).

Only standard SPARQL 1.1 is assumed. A tool call's write is one update operation when it fits
one request (`settings.max_quads` / `max_bytes`); larger writes (replay, import, drop, huge
calls) are staged in batches and swapped in (`kgctl.store.staging`), all-or-nothing either way.
Bindings travel as single-variable VALUES blocks; queries name their dataset explicitly
(``default-graph-uri`` / ``named-graph-uri``), so server system graphs and staging graphs stay
out of sight; results cut at a server row cap are detected and kgctl's own reads page past it.
One writer per process (lock) and one process per paper: the paper's last seq is cached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, RdfFormat, Triple, serialize

from kgctl.errors import InputError, StoreError
from kgctl.store.base import CallRecord, QueryResult, Term
from kgctl.store.bindings import query_form
from kgctl.store.embedded import parse_dataset, refuse_blank
from kgctl.store.endpoint import Endpoint, RowCapError
from kgctl.store.iris import graph_iri, provenance_graph_iri
from kgctl.store.provenance import LAST_SEQ_QUERY, RECORD, SEQ, record_from_literal
from kgctl.store.settings import EndpointSettings, settings_for
from kgctl.store.sparql import bind, quads_block, term_to_sparql
from kgctl.store.staging import JOURNAL_QUERY, Staged, hidden_graph, pending, stage, swap_update
from kgctl.store.transaction import check_paper_id, check_within, plan_write
from kgctl.store.views import (
    PREFIXES,
    merged_graphs,
    papers_of_graphs,
    triple_format,
    view_graphs,
)

GRAPHS_TTL_S = 2.0  # graph list cache: other processes' new papers show up within this time
# GROUP BY, not DISTINCT: the same answer, 100x faster on Virtuoso (1 s vs 8 ms, 3 papers)
GRAPHS_QUERY = "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
TRIPLE_PATTERN = "?s ?p ?o"
TRACE_PATTERN = f"?call <{SEQ.value}> ?seq ; <{RECORD.value}> ?record"
# graphs a server keeps for itself (Virtuoso's schema, LDP and URIQA graphs)
SYSTEM_GRAPHS = ("http://www.openlinksw.com/", "http://www.w3.org/ns/ldp",
                 "http://localuriqaserver/", "http://localhost:8890/")


def derived_urls(endpoint: str) -> tuple[str, str]:
    """(query, update) URLs from one endpoint URL.

    >>> derived_urls("http://127.0.0.1:7878/query")
    ('http://127.0.0.1:7878/query', 'http://127.0.0.1:7878/update')
    >>> derived_urls("http://host:8890/sparql-auth")
    ('http://host:8890/sparql-auth', 'http://host:8890/sparql-auth')
    """
    if endpoint.endswith("/query"):  # Oxigraph server and `kgctl serve` layout
        return endpoint, endpoint[: -len("/query")] + "/update"
    return endpoint, endpoint


def visible(iri: str) -> bool:
    return not hidden_graph(iri) and not iri.startswith(SYSTEM_GRAPHS)


class RemoteStore:
    """GraphStore over the SPARQL 1.1 Protocol."""

    def __init__(self, query_url: str, update_url: str | None = None, *,
                 settings: EndpointSettings | None = None,
                 timeout: float | None = None) -> None:
        self.query_url = query_url
        self.settings = settings or settings_for(query_url)
        self._endpoint = Endpoint(query_url, update_url or query_url, settings=self.settings,
                                  timeout=timeout)
        self._lock = threading.RLock()
        self._graphs: tuple[float, set[str]] | None = None
        self._last_seq: dict[str, int] = {}
        self._recovered: set[str] = set()  # papers whose unfinished swaps were finished

    @classmethod
    def from_endpoint(cls, endpoint: str, *, timeout: float | None = None) -> RemoteStore:
        if not endpoint.startswith(("http://", "https://")):
            raise InputError(f"endpoint must be an http(s) URL: {endpoint!r}")
        return cls(*derived_urls(endpoint), timeout=timeout)

    def __repr__(self) -> str:
        return f"RemoteStore({self.query_url})"

    # -- reads ------------------------------------------------------------------------------
    def query(self, sparql: str, *, bindings: Mapping[str, Term] | None = None,
              paper_id: str | None = None, union: bool = False, view: str | None = None
              ) -> QueryResult:
        if paper_id is not None and union:
            raise InputError("query: give paper_id or union, not both")
        text = bind(sparql, bindings)
        if paper_id is not None:
            check_paper_id(paper_id)
            dataset = [("default-graph-uri", graph_iri(paper_id).value)]
        else:
            graphs = sorted(self._visible_graphs())
            shown = view_graphs(graphs, view) if view is not None else None
            graphs = graphs if shown is None else shown
            dataset = [("named-graph-uri", g) for g in graphs]
            if union:
                dataset += [("default-graph-uri", g) for g in graphs]
        return self._endpoint.query(text, dataset=dataset,
                                    triples=query_form(text) in ("CONSTRUCT", "DESCRIBE"))

    def _rows(self, pattern: str, variables: tuple[str, ...], *, graph: NamedNode
              ) -> list[tuple]:
        """All rows of one of kgctl's own SELECTs over one graph. Past a server row cap, keyset
        pages ordered by the first variable's string (OFFSET past the cap fails on Virtuoso);
        rows of the boundary key are fetched twice and kept once."""
        names = " ".join(f"?{v}" for v in variables)
        dataset = [("default-graph-uri", graph.value)]
        text = f"SELECT {names} WHERE {{ {pattern} }}"
        try:
            return [tuple(r[v] for v in variables)
                    for r in self._endpoint.query(text, dataset=dataset)]
        except RowCapError as cap:
            page = max(2, cap.cap - 1)
        key = f"STR(?{variables[0]})"
        found: dict[tuple, None] = {}
        last: str | None = None
        while True:
            bound = "" if last is None else f" FILTER({key} >= {term_to_sparql(Literal(last))})"
            part = [tuple(r[v] for v in variables) for r in self._endpoint.query(
                f"SELECT {names} WHERE {{ {pattern}{bound} }} ORDER BY {key} LIMIT {page}",
                dataset=dataset)]
            found.update(dict.fromkeys(part))
            if len(part) < page:
                return list(found)
            if part[0][0].value == part[-1][0].value:
                raise StoreError(f"more than {page} rows share one key in graph {graph}: "
                                 "raise the server's row cap")
            last = part[-1][0].value

    def _visible_graphs(self) -> set[str]:
        now = time.monotonic()
        if self._graphs is None or now - self._graphs[0] > GRAPHS_TTL_S:
            rows = self._endpoint.query(GRAPHS_QUERY)
            self._graphs = (now, {r["g"].value for r in rows
                                  if isinstance(r["g"], NamedNode) and visible(r["g"].value)})
        return set(self._graphs[1])

    def _graphs_changed(self, added: Iterable[str] = (), removed: Iterable[str] = ()) -> None:
        if self._graphs is not None:
            self._graphs[1].update(added)
            self._graphs[1].difference_update(removed)

    def papers(self) -> list[str]:
        return papers_of_graphs(self._visible_graphs())

    def has_paper(self, paper_id: str) -> bool:
        check_paper_id(paper_id)
        graphs = self._visible_graphs()
        return any(g.value in graphs
                   for g in (graph_iri(paper_id), provenance_graph_iri(paper_id)))

    def triples(self, paper_id: str, *, subject: NamedNode | None = None,
                predicate: NamedNode | None = None) -> Iterator[Triple]:
        check_paper_id(paper_id)
        bound = {v: term for v, term in (("s", subject), ("p", predicate)) if term is not None}
        if not bound:
            return iter(self._graph_triples(graph_iri(paper_id)))
        rows = self.query(f"SELECT ?s ?p ?o WHERE {{ {TRIPLE_PATTERN} }}", bindings=bound,
                          paper_id=paper_id)
        return (Triple(r["s"], r["p"], r["o"]) for r in rows)

    def _graph_triples(self, graph: NamedNode) -> list[Triple]:
        return [Triple(*row) for row in self._rows(TRIPLE_PATTERN, ("s", "p", "o"), graph=graph)]

    def trace(self, paper_id: str) -> list[CallRecord]:
        check_paper_id(paper_id)
        rows = self._rows(TRACE_PATTERN, ("seq", "record"), graph=provenance_graph_iri(paper_id))
        records = [record_from_literal(record) for _seq, record in rows]
        return sorted(records, key=lambda r: r.seq)

    def export(self, *, paper_id: str | None = None, format: RdfFormat = RdfFormat.TRIG) -> bytes:
        if paper_id is None:
            if triple_format(format):
                raise InputError(f"{format.name} holds one graph: name a paper to export")
            quads = [Quad(t.subject, t.predicate, t.object, NamedNode(g))
                     for g in sorted(self._visible_graphs())
                     for t in self._graph_triples(NamedNode(g))]
            return serialize(quads, format=format, prefixes=PREFIXES)
        self._require(paper_id)
        if triple_format(format):
            return serialize(self.triples(paper_id), format=format, prefixes=PREFIXES)
        quads = [Quad(t.subject, t.predicate, t.object, g)
                 for g in (graph_iri(paper_id), provenance_graph_iri(paper_id))
                 for t in self._graph_triples(g)]
        return serialize(quads, format=format, prefixes=PREFIXES)

    def _require(self, paper_id: str) -> None:
        check_paper_id(paper_id)
        if not self.has_paper(paper_id):
            raise StoreError(f"unknown paper: {paper_id!r} (see `kgctl store papers`)")

    # -- writes -----------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._lock:
            yield

    def _update(self, sparql: str) -> None:
        try:
            self._endpoint.update(sparql)
        except StoreError:
            self._forget()
            raise

    def _forget(self) -> None:
        """After a failure: re-read seqs, graphs and unfinished swaps before trusting them."""
        self._last_seq.clear()
        self._recovered.clear()
        self._graphs = None

    def _recover(self, paper_ids: Iterable[str]) -> None:
        """Finish swaps of these papers that a crash or a lost answer cut short."""
        todo = [pid for pid in paper_ids if pid not in self._recovered]
        if not todo:
            return
        targets = {g.value for pid in todo for g in (graph_iri(pid), provenance_graph_iri(pid))}
        plan = pending(self._endpoint.query(JOURNAL_QUERY), targets)
        if plan:
            self._update(swap_update(plan))
            self._graphs = None
        self._recovered.update(todo)

    def _fits(self, quads: list[Quad]) -> bool:
        size = sum(len(str(q)) for q in quads)
        return len(quads) <= self.settings.max_quads and size <= self.settings.max_bytes

    def _swap(self, plan: list[Staged]) -> None:
        stage(self._update, plan, max_quads=self.settings.max_quads,
              max_bytes=self.settings.max_bytes)
        self._update(swap_update(plan))

    def write(self, paper_id: str, *, insert: Iterable[Triple] = (),
              delete: Iterable[Triple] = (), record: CallRecord | None = None
              ) -> CallRecord | None:
        with self._lock:
            check_paper_id(paper_id)
            self._recover([paper_id])
            last = self._last_seq_of(paper_id) if record is not None else 0
            plan = plan_write(paper_id, insert=insert, delete=delete, record=record,
                              last_seq=last)
            if self._fits(plan.delete + plan.insert):
                if plan.delete:  # one operation: servers apply one operation atomically
                    self._update(f"DELETE {{ {quads_block(plan.delete)} }} "
                                 f"INSERT {{ {quads_block(plan.insert)} }} WHERE {{}}")
                elif plan.insert:
                    self._update(f"INSERT DATA {{ {quads_block(plan.insert)} }}")
            else:
                graphs = {q.graph_name for q in plan.delete + plan.insert}
                self._swap([Staged(g, replace=True, copy=True,
                                   delete=[q for q in plan.delete if q.graph_name == g],
                                   insert=[q for q in plan.insert if q.graph_name == g])
                            for g in sorted(graphs, key=lambda g: g.value)])
            self._graphs_changed(added={q.graph_name.value for q in plan.insert})
            if plan.record is not None:
                self._last_seq[paper_id] = plan.record.seq
            return plan.record

    def _last_seq_of(self, paper_id: str) -> int:
        if paper_id not in self._last_seq:
            rows = list(self._endpoint.query(
                LAST_SEQ_QUERY, dataset=[("default-graph-uri",
                                          provenance_graph_iri(paper_id).value)]))
            last = rows[0]["last"] if rows else None
            self._last_seq[paper_id] = int(last.value) if last is not None else 0
        return self._last_seq[paper_id]

    def update(self, sparql: str, *, bindings: Mapping[str, Term] | None = None) -> None:
        """One SPARQL Update as written (not retried when its answer is lost)."""
        with self._lock:
            self._forget()
            self._endpoint.update(bind(sparql, bindings), retry=False)

    def replace_paper(self, paper_id: str, quads: Iterable[Quad]) -> None:
        """Atomically replace a paper's graph and provenance by `quads`."""
        check_paper_id(paper_id)
        with self._lock:
            self._last_seq.pop(paper_id, None)
            self.replace_graphs([graph_iri(paper_id), provenance_graph_iri(paper_id),
                                 *merged_graphs(paper_id)], quads)

    def replace_graphs(self, graphs: Iterable[NamedNode], quads: Iterable[Quad]) -> None:
        """Staged and swapped, whatever the size: all or nothing on every server (one request
        of several operations is not atomic everywhere; an interrupted swap is finished by
        the journal, here or by the next write to these graphs)."""
        graphs, quads = sorted(set(graphs), key=lambda g: g.value), list(quads)
        check_within(graphs, quads)
        with self._lock:
            journal = pending(self._endpoint.query(JOURNAL_QUERY), {g.value for g in graphs})
            if journal:
                self._update(swap_update(journal))
            self._swap([Staged(g, replace=True, insert=[q for q in quads if q.graph_name == g])
                        for g in graphs])
            self._graphs_changed(added={q.graph_name.value for q in quads},
                                 removed={g.value for g in graphs} -
                                 {q.graph_name.value for q in quads})

    def drop(self, paper_id: str) -> None:
        with self._lock:
            self._require(paper_id)
            self.replace_paper(paper_id, [])

    def import_data(self, data: bytes, *, format: RdfFormat = RdfFormat.TRIG) -> list[str]:
        return self.import_quads(parse_dataset(data, format=format))

    def import_quads(self, quads: list[Quad]) -> list[str]:
        refuse_blank(quads)
        touched = {q.graph_name.value for q in quads if isinstance(q.graph_name, NamedNode)}
        papers = papers_of_graphs(touched)
        with self._lock:
            self._recover(papers)
            for pid in papers:
                self._last_seq.pop(pid, None)
            if self._fits(quads):
                if quads:
                    self._update(f"INSERT DATA {{ {quads_block(quads)} }}")
            elif any(isinstance(q.graph_name, DefaultGraph) for q in quads):
                raise InputError("a large import into a remote store needs every triple in a "
                                 "named graph")
            else:
                self._swap([Staged(NamedNode(g), replace=False,
                                   insert=[q for q in quads if q.graph_name.value == g])
                            for g in sorted(touched)])
            self._graphs_changed(added=touched)
        return papers

    def flush(self) -> None:
        """Nothing to do: every write is already on the server."""

    def close(self) -> None:
        self._endpoint.close()
