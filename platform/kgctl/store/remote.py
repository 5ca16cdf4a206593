"""The remote backend: any SPARQL 1.1 Query + Update (+ Graph Store Protocol) endpoint.

Each write is one update request (the endpoint applies it as one transaction); results are
parsed by pyoxigraph so callers get the same solution objects as from the embedded store
(CONSTRUCT/DESCRIBE give a list of Triples). Bindings travel as a VALUES block built with
``term_to_sparql``. One writer per process (lock); the paper's last seq is read from the
endpoint before each recorded write, so several processes must not write the same paper.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

import httpx
from pyoxigraph import (
    NamedNode,
    Quad,
    QueryResultsFormat,
    RdfFormat,
    Triple,
    parse,
    parse_query_results,
    serialize,
)

from kgctl.errors import InputError, StoreError
from kgctl.store.base import CallRecord, QueryResult, Term
from kgctl.store.embedded import parse_dataset
from kgctl.store.iris import graph_iri, provenance_graph_iri
from kgctl.store.provenance import LAST_SEQ_QUERY, TRACE_QUERY, record_from_literal
from kgctl.store.sparql import bind, data_update
from kgctl.store.transaction import check_paper_id, plan_write
from kgctl.store.views import PREFIXES, papers_of_graphs, triple_format

DEFAULT_TIMEOUT_S = 30.0
HTTP_ERROR = 400
MAX_ERROR_CHARS = 300
ACCEPT = "application/sparql-results+json, application/n-triples;q=0.9"
GRAPHS_QUERY = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
QUADS_QUERY = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
ALL_QUADS_QUERY = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"


def derived_urls(endpoint: str) -> tuple[str, str, str | None]:
    """(query, update, gsp) URLs from one endpoint URL.

    >>> derived_urls("http://127.0.0.1:7878/query")
    ('http://127.0.0.1:7878/query', 'http://127.0.0.1:7878/update', 'http://127.0.0.1:7878/store')
    >>> derived_urls("http://host/ds/sparql")
    ('http://host/ds/sparql', 'http://host/ds/sparql', None)
    """
    if endpoint.endswith("/query"):  # Oxigraph server layout (and Fuseki's query/update pair)
        root = endpoint[: -len("/query")]
        return endpoint, root + "/update", root + "/store"
    return endpoint, endpoint, None


class RemoteStore:
    """GraphStore over HTTP: SPARQL 1.1 Protocol for query and update, GSP for graph reads."""

    def __init__(self, query_url: str, update_url: str | None = None, gsp_url: str | None = None,
                 *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.query_url = query_url
        self.update_url = update_url or query_url
        self.gsp_url = gsp_url
        self._http = httpx.Client(timeout=timeout)
        self._lock = threading.RLock()

    @classmethod
    def from_endpoint(cls, endpoint: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> RemoteStore:
        if not endpoint.startswith(("http://", "https://")):
            raise InputError(f"endpoint must be an http(s) URL: {endpoint!r}")
        return cls(*derived_urls(endpoint), timeout=timeout)

    def __repr__(self) -> str:
        return f"RemoteStore({self.query_url})"

    # -- HTTP -------------------------------------------------------------------------------
    def _send(self, method: str, url: str, **request) -> httpx.Response:
        try:
            response = self._http.request(method, url, **request)
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach SPARQL endpoint {url}: {exc}") from None
        if response.status_code >= HTTP_ERROR:
            detail = " ".join(response.text.split())[:MAX_ERROR_CHARS]
            raise StoreError(f"endpoint {url} answered {response.status_code}: {detail}")
        return response

    def _select(self, sparql: str, *, default_graphs: Iterable[NamedNode] = (),
                named_graphs: Iterable[NamedNode] = ()) -> QueryResult:
        params = [("default-graph-uri", g.value) for g in default_graphs]
        params += [("named-graph-uri", g.value) for g in named_graphs]
        response = self._send("POST", self.query_url, params=params, data={"query": sparql},
                              headers={"Accept": ACCEPT})
        media = response.headers.get("content-type", "").split(";")[0].strip()
        try:
            if media in ("application/n-triples", "text/plain"):
                return [q.triple for q in parse(response.content, format=RdfFormat.N_TRIPLES)]
            result_format = QueryResultsFormat.from_media_type(media)
            if result_format is None:
                raise StoreError(f"endpoint {self.query_url} answered unknown type {media!r}")
            return parse_query_results(response.content, format=result_format)
        except SyntaxError as exc:
            raise StoreError(f"endpoint {self.query_url} sent unreadable results: {exc}"
                             ) from None

    def _update(self, sparql: str) -> None:
        self._send("POST", self.update_url, content=sparql.encode(),
                   headers={"Content-Type": "application/sparql-update"})

    # -- reads ------------------------------------------------------------------------------
    def query(self, sparql: str, *, bindings: Mapping[str, Term] | None = None,
              paper_id: str | None = None, union: bool = False) -> QueryResult:
        if paper_id is not None and union:
            raise InputError("query: give paper_id or union, not both")
        graphs: list[NamedNode] = []
        if paper_id is not None:
            check_paper_id(paper_id)
            graphs = [graph_iri(paper_id)]
        elif union:  # GRAPH ?g patterns still see every named graph
            graphs = self._named_graphs()
            return self._select(bind(sparql, bindings), default_graphs=graphs,
                                named_graphs=graphs)
        return self._select(bind(sparql, bindings), default_graphs=graphs)

    def _named_graphs(self) -> list[NamedNode]:
        return [row["g"] for row in self._select(GRAPHS_QUERY)
                if isinstance(row["g"], NamedNode)]

    def papers(self) -> list[str]:
        return papers_of_graphs(g.value for g in self._named_graphs())

    def triples(self, paper_id: str) -> Iterator[Triple]:
        check_paper_id(paper_id)
        return iter(self._graph_triples(graph_iri(paper_id)))

    def _graph_triples(self, graph: NamedNode) -> list[Triple]:
        if self.gsp_url is None:
            rows = self._select(QUADS_QUERY, default_graphs=[graph])
            return [Triple(r["s"], r["p"], r["o"]) for r in rows]
        try:
            response = self._http.get(self.gsp_url, params={"graph": graph.value},
                                      headers={"Accept": "application/n-triples"})
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach SPARQL endpoint {self.gsp_url}: {exc}") from None
        if response.status_code == httpx.codes.NOT_FOUND:
            return []
        if response.status_code >= HTTP_ERROR:
            raise StoreError(f"endpoint {self.gsp_url} answered {response.status_code}")
        return [q.triple for q in parse(response.content, format=RdfFormat.N_TRIPLES)]

    def trace(self, paper_id: str) -> list[CallRecord]:
        check_paper_id(paper_id)
        rows = self._select(TRACE_QUERY, default_graphs=[provenance_graph_iri(paper_id)])
        return [record_from_literal(r["record"]) for r in rows]

    def export(self, *, paper_id: str | None = None, format: RdfFormat = RdfFormat.TRIG) -> bytes:
        if paper_id is None:
            if triple_format(format):
                raise InputError(f"{format.name} holds one graph: name a paper to export")
            rows = self._select(ALL_QUADS_QUERY)
            quads = [Quad(r["s"], r["p"], r["o"], r["g"]) for r in rows]
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
        if paper_id not in self.papers():
            raise StoreError(f"unknown paper: {paper_id!r} (see `kgctl store papers`)")

    # -- writes -----------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._lock:
            yield

    def write(self, paper_id: str, *, insert: Iterable[Triple] = (),
              delete: Iterable[Triple] = (), record: CallRecord | None = None
              ) -> CallRecord | None:
        with self._lock:
            last = self._last_seq_of(paper_id) if record is not None else 0
            plan = plan_write(paper_id, insert=insert, delete=delete, record=record,
                              last_seq=last)
            if plan.delete or plan.insert:
                self._update(data_update(delete=plan.delete, insert=plan.insert))
            return plan.record

    def _last_seq_of(self, paper_id: str) -> int:
        check_paper_id(paper_id)
        rows = list(self._select(LAST_SEQ_QUERY,
                                 default_graphs=[provenance_graph_iri(paper_id)]))
        last = rows[0]["last"] if rows else None
        return int(last.value) if last is not None else 0

    def update(self, sparql: str, *, bindings: Mapping[str, Term] | None = None) -> None:
        with self._lock:
            self._update(bind(sparql, bindings))

    def replace_paper(self, paper_id: str, quads: Iterable[Quad]) -> None:
        """Atomically replace a paper's graph and provenance by `quads`."""
        check_paper_id(paper_id)
        with self._lock:
            self._update(data_update(
                drop=[graph_iri(paper_id), provenance_graph_iri(paper_id)], insert=quads))

    def drop(self, paper_id: str) -> None:
        with self._lock:
            self._require(paper_id)
            self._update(data_update(drop=[graph_iri(paper_id), provenance_graph_iri(paper_id)]))

    def import_data(self, data: bytes, *, format: RdfFormat = RdfFormat.TRIG) -> list[str]:
        quads = parse_dataset(data, format=format)
        with self._lock:
            self._update(data_update(insert=quads))
        return papers_of_graphs({q.graph_name.value for q in quads
                                 if isinstance(q.graph_name, NamedNode)})

    def close(self) -> None:
        self._http.close()
