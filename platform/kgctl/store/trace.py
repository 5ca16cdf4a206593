"""Traces: a paper's call records as JSONL (one CallRecord per line, delta included), and the
replay that rebuilds the paper graph from them by applying the recorded deltas in order.

>>> from kgctl.store.base import CallRecord, GraphStore
>>> rec = CallRecord(paper_id="p1", seq=1, tool="t", arguments={}, time="2024-01-01T00:00:00Z",
...                  inserted='<http://a> <http://p> "x" .\\n')
>>> records = read_trace(trace_jsonl([rec]))
>>> sorted(str(t) for t in rebuild(records))
['<http://a> <http://p> "x"']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import ValidationError
from pyoxigraph import Quad, RdfFormat, Triple, parse

from kgctl.errors import InputError
from kgctl.store.base import CallRecord, GraphStore
from kgctl.store.iris import graph_iri
from kgctl.store.provenance import record_quads
from kgctl.store.transaction import check_paper_id, check_record, checked_triples


def trace_jsonl(records: Iterable[CallRecord]) -> str:
    return "".join(record.model_dump_json() + "\n" for record in records)


def read_trace(text: str, *, source: str = "trace") -> list[CallRecord]:
    """Records of a JSONL trace; a bad line is an InputError naming it."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = CallRecord.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InputError(f"{source}:{number}: not a call record: {first['msg']}") from None
        try:
            check_record(record)
        except InputError as exc:
            raise InputError(f"{source}:{number}: {exc}") from None
        records.append(record)
    return records


def select_paper(records: list[CallRecord], paper_id: str | None) -> tuple[str, list[CallRecord]]:
    """The one paper to replay and its records, checked to run 1..n without gaps."""
    papers = sorted({r.paper_id for r in records})
    if paper_id is None:
        if len(papers) != 1:
            raise InputError(f"the trace holds {len(papers)} papers {papers}: choose with --paper")
        paper_id = papers[0]
    check_paper_id(paper_id)
    chosen = sorted((r for r in records if r.paper_id == paper_id), key=lambda r: r.seq)
    if not chosen:
        raise InputError(f"the trace has no calls for paper {paper_id!r}")
    seqs = [r.seq for r in chosen]
    if seqs != list(range(1, len(chosen) + 1)):
        raise InputError(f"trace of {paper_id!r} is not a complete sequence 1..{len(chosen)}")
    return paper_id, chosen


def _delta(text: str, record: CallRecord) -> list[Triple]:
    what = f"call {record.seq} of {record.paper_id!r}"
    try:
        triples = [q.triple for q in parse(text.encode(), format=RdfFormat.N_TRIPLES)]
    except SyntaxError as exc:
        raise InputError(f"{what}: bad delta: {exc}") from None
    return checked_triples(triples, what)


def rebuild(records: Iterable[CallRecord], *, step: Callable[[], None] | None = None
            ) -> set[Triple]:
    """The paper graph after applying each call's delete-then-insert in order."""
    graph: set[Triple] = set()
    for record in records:
        graph.difference_update(_delta(record.deleted, record))
        graph.update(_delta(record.inserted, record))
        if step is not None:
            step()
    return graph


def replay_quads(paper_id: str, records: list[CallRecord], *,
                 step: Callable[[], None] | None = None) -> list[Quad]:
    """Paper graph and provenance quads rebuilt from a checked trace."""
    graph = graph_iri(paper_id)
    quads = [Quad(t.subject, t.predicate, t.object, graph) for t in rebuild(records, step=step)]
    for record in records:
        quads += record_quads(record)
    return quads


def replay(store: GraphStore, records: list[CallRecord], *, paper_id: str | None = None,
           step: Callable[[], None] | None = None) -> str:
    """Rebuild one paper (graph and provenance) from its trace, atomically replacing it."""
    pid, chosen = select_paper(records, paper_id)
    store.replace_paper(pid, replay_quads(pid, chosen, step=step))
    return pid
