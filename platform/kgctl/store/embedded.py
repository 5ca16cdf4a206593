"""The embedded backend: a pyoxigraph Store on disk (or in memory) owned by this process.

One writer lock per process; each write is one pyoxigraph transaction (``extend`` for pure
insertions, one multi-operation ``update`` when something is deleted).

>>> from pyoxigraph import Literal, NamedNode, Triple
>>> from kgctl.store.base import CallRecord
>>> store = EmbeddedStore()
>>> t = Triple(NamedNode("https://ex.org/a"), NamedNode("https://ex.org/name"), Literal("A"))
>>> rec = CallRecord(paper_id="p1", seq=0, tool="add", arguments={}, time="2024-01-01T00:00:00Z")
>>> store.write("p1", insert=[t], record=rec).seq
1
>>> store.papers(), [s["o"].value for s in store.query("SELECT ?o { ?s ?p ?o }", paper_id="p1")]
(['p1'], ['A'])
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyoxigraph import (
    BlankNode,
    NamedNode,
    Quad,
    QuadParser,
    RdfFormat,
    Store,
    Triple,
    parse,
    serialize,
)

from kgctl.errors import InputError, StoreError
from kgctl.store.base import CallRecord, QueryResult, Term
from kgctl.store.iris import graph_iri, provenance_graph_iri
from kgctl.store.provenance import LAST_SEQ_QUERY, TRACE_QUERY, record_from_literal
from kgctl.store.sparql import bind, data_update
from kgctl.store.transaction import check_paper_id, check_within, plan_write
from kgctl.store.views import (
    PREFIXES,
    merged_graphs,
    papers_of_graphs,
    triple_format,
    view_graphs,
)

BULK_QUADS = 10_000  # an import this large goes through the bulk loader (files written whole)


def check_store_folder(path: Path) -> None:
    """Refuse a path that would mix a new database into other files; a new or empty folder,
    or one holding a store (RocksDB's `CURRENT` file), is fine."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} is a file, not a store folder")
    if path.is_dir() and not (path / "CURRENT").is_file() and any(path.iterdir()):
        raise InputError(f"{path} holds other files, not a store; give the store's own folder "
                         "(e.g. kgctl-data/store) or a new one")


def open_database(path: Path | None) -> Store:
    """The pyoxigraph database at `path` (in memory for None), or a StoreError saying why not."""
    if path is None:
        return Store()
    check_store_folder(path)
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # kgctl-data/store on a new machine
        return Store(str(path))
    except OSError as exc:
        if "lock" in str(exc).lower():
            raise StoreError(
                f"another process holds the store at {path} (stop it or use --endpoint)"
            ) from None
        raise StoreError(f"cannot open the store at {path}: {exc}") from None


class EmbeddedStore:
    """GraphStore on pyoxigraph; ``path=None`` keeps everything in memory."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._store = open_database(path)
        self._lock = threading.RLock()
        self._last_seq: dict[str, int] = {}  # valid because this process is the only writer

    def __repr__(self) -> str:
        return f"EmbeddedStore({str(self.path) if self.path else 'memory'})"

    # -- reads ------------------------------------------------------------------------------
    def query(self, sparql: str, *, bindings: Mapping[str, Term] | None = None,
              paper_id: str | None = None, union: bool = False, view: str | None = None
              ) -> QueryResult:
        if paper_id is not None and union:
            raise InputError("query: give paper_id or union, not both")
        options: dict = {"use_default_graph_as_union": union}
        if paper_id is not None:
            check_paper_id(paper_id)
            options["default_graph"] = graph_iri(paper_id)
        elif view is not None:
            shown = view_graphs((g.value for g in self._store.named_graphs()
                                 if isinstance(g, NamedNode)), view)
            if shown is not None:
                graphs = [NamedNode(g) for g in shown]
                options = {"named_graphs": graphs} | ({"default_graph": graphs} if union else {})
        # VALUES injection rather than SEP-0007 substitution: same meaning on every backend
        return self._run(bind(sparql, bindings), **options)

    def _run(self, sparql: str, **options) -> QueryResult:
        try:
            return self._store.query(sparql, **options)
        except SyntaxError as exc:
            raise InputError(f"invalid SPARQL query: {exc}") from None
        except (OSError, ValueError) as exc:
            raise StoreError(f"query failed: {exc}") from None

    def papers(self) -> list[str]:
        return papers_of_graphs(g.value for g in self._store.named_graphs()
                                if isinstance(g, NamedNode))

    def has_paper(self, paper_id: str) -> bool:
        check_paper_id(paper_id)
        return any(self._store.contains_named_graph(g)
                   for g in (graph_iri(paper_id), provenance_graph_iri(paper_id)))

    def triples(self, paper_id: str, *, subject: NamedNode | None = None,
                predicate: NamedNode | None = None) -> Iterator[Triple]:
        check_paper_id(paper_id)
        return (q.triple for q in self._store.quads_for_pattern(subject, predicate, None,
                                                                graph_iri(paper_id)))

    def _graph_quads(self, graph: NamedNode) -> Iterator[Quad]:
        return self._store.quads_for_pattern(None, None, None, graph)

    def trace(self, paper_id: str) -> list[CallRecord]:
        check_paper_id(paper_id)
        rows = self._store.query(TRACE_QUERY, default_graph=provenance_graph_iri(paper_id))
        return [record_from_literal(r["record"]) for r in rows]

    def export(self, *, paper_id: str | None = None, format: RdfFormat = RdfFormat.TRIG) -> bytes:
        if paper_id is None:
            if triple_format(format):
                raise InputError(f"{format.name} holds one graph: name a paper to export")
            return self._store.dump(format=format, prefixes=PREFIXES if format.supports_datasets
                                    else None)
        self._require(paper_id)
        if triple_format(format):
            return serialize(self.triples(paper_id), format=format, prefixes=PREFIXES)
        quads = [*self._graph_quads(graph_iri(paper_id)),
                 *self._graph_quads(provenance_graph_iri(paper_id))]
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

    def write(self, paper_id: str, *, insert: Iterable[Triple] = (),
              delete: Iterable[Triple] = (), record: CallRecord | None = None
              ) -> CallRecord | None:
        with self._lock:
            last = self._last_seq_of(paper_id) if record is not None else 0
            plan = plan_write(paper_id, insert=insert, delete=delete, record=record,
                              last_seq=last)
            # a merged view of the paper is stale once its graph changes: it goes in the same
            # transaction (the merged view shows the paper graph until the next merge)
            stale = [g for g in merged_graphs(paper_id) if self._store.contains_named_graph(g)]
            try:
                if plan.delete or stale:
                    self._store.update(data_update(drop=stale, delete=plan.delete,
                                                   insert=plan.insert))
                elif plan.insert:
                    self._store.extend(plan.insert)
            except (OSError, RuntimeError, SyntaxError) as exc:
                raise StoreError(f"write to paper {paper_id!r} failed, nothing written: {exc}"
                                 ) from None
            if plan.record is not None:
                self._last_seq[paper_id] = plan.record.seq
            return plan.record

    def _last_seq_of(self, paper_id: str) -> int:
        if paper_id not in self._last_seq:
            check_paper_id(paper_id)
            rows = list(self._store.query(LAST_SEQ_QUERY,
                                          default_graph=provenance_graph_iri(paper_id)))
            last = rows[0]["last"] if rows else None
            self._last_seq[paper_id] = int(last.value) if last is not None else 0
        return self._last_seq[paper_id]

    def update(self, sparql: str, *, bindings: Mapping[str, Term] | None = None) -> None:
        with self._lock:
            self._last_seq.clear()
            self._apply(bind(sparql, bindings))

    def _apply(self, sparql: str) -> None:
        try:
            self._store.update(sparql)
        except SyntaxError as exc:
            raise InputError(f"invalid SPARQL update: {exc}") from None
        except (OSError, RuntimeError) as exc:
            raise StoreError(f"update failed, nothing written: {exc}") from None

    def replace_paper(self, paper_id: str, quads: Iterable[Quad]) -> None:
        """Atomically replace a paper's graph and provenance by `quads`."""
        check_paper_id(paper_id)
        with self._lock:
            self._last_seq.pop(paper_id, None)
            self.replace_graphs([graph_iri(paper_id), provenance_graph_iri(paper_id),
                                 *merged_graphs(paper_id)], quads)

    def replace_graphs(self, graphs: Iterable[NamedNode], quads: Iterable[Quad]) -> None:
        graphs, quads = list(graphs), list(quads)
        check_within(graphs, quads)
        with self._lock:
            self._apply(data_update(drop=graphs, insert=quads))

    def drop(self, paper_id: str) -> None:
        with self._lock:
            self._require(paper_id)
            self._last_seq.pop(paper_id, None)
            self._apply(data_update(drop=[graph_iri(paper_id), provenance_graph_iri(paper_id),
                                          *merged_graphs(paper_id)]))

    def import_data(self, data: bytes, *, format: RdfFormat = RdfFormat.TRIG) -> list[str]:
        return self.import_quads(parse_dataset(data, format=format))

    def import_quads(self, quads: list[Quad]) -> list[str]:
        refuse_blank(quads)
        with self._lock:
            self._last_seq.clear()
            try:  # both atomic; the bulk loader writes files, cheaper only for many quads
                if len(quads) >= BULK_QUADS:
                    self._store.bulk_extend(quads)
                else:
                    self._store.extend(quads)
            except OSError as exc:
                raise StoreError(f"import failed, nothing imported: {exc}") from None
        return papers_of_graphs({q.graph_name.value for q in quads
                                 if isinstance(q.graph_name, NamedNode)})

    def quads(self) -> Iterator[Quad]:
        """Every quad of the store."""
        return self._store.quads_for_pattern(None, None, None, None)

    def flush(self) -> None:
        if self.path is not None:
            with self._lock:
                self._store.flush()

    def close(self) -> None:
        with self._lock:
            if self.path is not None:
                self._store.flush()
            del self._store  # releases the RocksDB lock once collected


def parse_dataset(data: bytes, *, format: RdfFormat) -> list[Quad]:
    """All quads of `data`, or InputError naming the line and column: nothing half-read."""
    try:
        parser: QuadParser = parse(data, format=format)
        quads = list(parser)
    except SyntaxError as exc:
        raise InputError(f"corrupt {format.name} data, nothing imported: {exc}") from None
    return quads


def refuse_blank(quads: list[Quad]) -> None:
    """Blank nodes are refused, as in every write: a paper's nodes have IRIs."""
    blank = next((q for q in quads if isinstance(q.subject, BlankNode)
                  or isinstance(q.object, BlankNode)), None)
    if blank is not None:
        raise InputError(f"blank nodes are not stored (mint an IRI), nothing imported: {blank}")
