"""The store contract every box codes against.

A store holds one named graph per paper plus one provenance graph per paper. Reads are SPARQL
(results are pyoxigraph objects for every backend); each write is one atomic transaction into one
paper's graph, together with the provenance record of the call that caused it. Values reach
SPARQL only as RDF terms (`bindings`), never pasted into the query text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict
from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Triple,
)

Term = NamedNode | BlankNode | Literal
QueryResult = QuerySolutions | QueryBoolean | QueryTriples
FLUSH_QUADS = 50_000  # a batch stage flushes the store after writing about this many quads


class Evidence(BaseModel):
    """Where in the paper a call's content was read: the quoted text and its location."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    quote: str
    section: str | None = None
    start: int | None = None  # character offsets in the ingested paper text
    end: int | None = None


class CallRecord(BaseModel):
    """One accepted tool call: a line of a paper's replayable trace.

    Pass ``seq=0`` to let the store assign the next position; a non-zero ``seq`` must be exactly
    the next one or the write is refused. ``inserted``/``deleted`` are the call's delta as
    canonical N-Triples (sorted lines); the store fills them from the write itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    paper_id: str
    seq: int  # position in the paper's trace, 1-based; 0 = assigned by the store
    tool: str
    arguments: dict[str, Any]
    iris: tuple[str, ...] = ()  # IRIs created or changed
    time: str  # ISO 8601, UTC; provenance only, never part of an IRI
    evidence: Evidence | None = None
    inserted: str = ""  # canonical N-Triples, filled by the store
    deleted: str = ""  # canonical N-Triples, filled by the store


class GraphStore(Protocol):
    def query(
        self,
        sparql: str,
        *,
        bindings: Mapping[str, Term] | None = None,
        paper_id: str | None = None,
        union: bool = False,
        view: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query. `bindings` substitute variables by RDF terms. `paper_id` makes
        that paper's graph the default graph; `union` makes the union of all graphs default.
        `view` ("merged" or "raw", see store.views) restricts the graphs (named, and the union)
        to those the view shows; None shows every graph."""

    def writing(self) -> AbstractContextManager[None]:
        """Hold the writer lock across a validate-then-write sequence."""

    def write(
        self,
        paper_id: str,
        *,
        insert: Iterable[Triple] = (),
        delete: Iterable[Triple] = (),
        record: CallRecord | None = None,
    ) -> CallRecord | None:
        """Delete then insert triples in the paper's graph, and store `record` in its
        provenance graph, as one atomic transaction: all of it or nothing. Returns the record
        as stored (seq assigned, delta filled), None without a record."""

    def update(self, sparql: str, *, bindings: Mapping[str, Term] | None = None) -> None:
        """Run one SPARQL Update as one atomic transaction."""

    def papers(self) -> list[str]:
        """Paper ids that have a graph, sorted."""

    def has_paper(self, paper_id: str) -> bool:
        """Whether `paper_id` has a graph or provenance graph (without listing every paper)."""

    def triples(self, paper_id: str, *, subject: NamedNode | None = None,
                predicate: NamedNode | None = None) -> Iterator[Triple]:
        """All triples of one paper's graph, or those with this subject and/or predicate."""

    def trace(self, paper_id: str) -> list[CallRecord]:
        """The paper's accepted calls in order (from its provenance graph)."""

    def replace_paper(self, paper_id: str, quads: Iterable[Quad]) -> None:
        """Atomically replace a paper's graph and provenance graph by `quads` (replay)."""

    def replace_graphs(self, graphs: Iterable[NamedNode], quads: Iterable[Quad]) -> None:
        """Atomically replace the named `graphs` by `quads` (each in one of them), however
        many: what the batch stages write (dedup graph, review decisions)."""

    def drop(self, paper_id: str) -> None:
        """Remove a paper's graph and its provenance; unknown paper is a StoreError."""

    def export(self, *, paper_id: str | None = None, format: RdfFormat = RdfFormat.TRIG) -> bytes:
        """Serialise one paper (graph + provenance) or the whole store."""

    def import_data(self, data: bytes, *, format: RdfFormat = RdfFormat.TRIG) -> list[str]:
        """Load a dataset atomically; returns the paper ids it touched."""

    def import_quads(self, quads: list[Quad]) -> list[str]:
        """Add quads atomically (as `import_data`, without a serialisation)."""

    def flush(self) -> None:
        """Write what the store buffers in memory to disk; a batch stage calls it after each
        paper so that its memory stays bounded (RocksDB's write buffers grow otherwise)."""

    def close(self) -> None: ...
