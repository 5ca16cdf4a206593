"""Plan one write: everything checked and turned into quads before the store is touched, so a
refused write changes nothing.

>>> from pyoxigraph import NamedNode, Triple, Literal
>>> t = Triple(NamedNode("http://a"), NamedNode("http://p"), Literal("1"))
>>> plan = plan_write("p1", insert=[t], delete=(), record=None, last_seq=0)
>>> [q.graph_name.value for q in plan.insert]
['https://w3id.org/kgctl/paper/p1']
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from pyoxigraph import BlankNode, NamedNode, Quad, Triple

from kgctl.errors import InputError, StoreError
from kgctl.store.base import CallRecord
from kgctl.store.iris import PAPER_BASE, graph_iri, paper_of_graph
from kgctl.store.provenance import canonical_ntriples, check_time, record_quads


class WritePlan(NamedTuple):
    delete: list[Quad]
    insert: list[Quad]
    record: CallRecord | None


def check_paper_id(pid: str) -> None:
    if not (isinstance(pid, str) and _valid_paper_id(pid)):
        raise InputError(f"not a paper id: {pid!r} (make one with kgctl.store.iris.paper_id)")


@lru_cache(maxsize=1024)  # every query and write checks its paper: a hot path
def _valid_paper_id(pid: str) -> bool:
    try:
        return paper_of_graph(NamedNode(PAPER_BASE + pid).value) == pid
    except ValueError:  # not an IRI once prefixed (space, '>', control characters)
        return False


def check_record(record: CallRecord) -> None:
    """The paper id, time and IRIs of a call record, as the store takes them."""
    check_paper_id(record.paper_id)
    check_time(record.time)
    for iri in record.iris:
        try:
            NamedNode(iri)
        except ValueError:
            raise InputError(f"call record IRI {iri!r} is not a valid IRI") from None



def check_within(graphs: list[NamedNode], quads: list[Quad]) -> None:
    """Quads of a graph replacement: each in one of the graphs, no blank nodes.

    >>> from pyoxigraph import Literal
    >>> g = NamedNode("http://g")
    >>> check_within([g], [Quad(g, g, Literal("x"), NamedNode("http://h"))])
    Traceback (most recent call last):
    kgctl.errors.InputError: a quad outside the graphs replaced: <http://h>
    """
    names = set(graphs)
    for quad in quads:
        if quad.graph_name not in names:
            raise InputError(f"a quad outside the graphs replaced: {quad.graph_name}")
        if isinstance(quad.subject, BlankNode) or isinstance(quad.object, BlankNode):
            raise InputError(f"blank nodes are not stored (mint an IRI): {quad}")


def checked_triples(triples: Iterable[Triple], what: str) -> list[Triple]:
    out = list(triples)
    for triple in out:
        if not isinstance(triple, Triple):
            raise InputError(f"{what}: expected pyoxigraph Triple, got {type(triple).__name__}")
        if isinstance(triple.subject, BlankNode) or isinstance(triple.object, BlankNode):
            raise InputError(f"{what}: blank nodes are not stored (mint an IRI): {triple}")
    return out


def next_record(record: CallRecord, pid: str, last_seq: int, inserted: list[Triple],
                deleted: list[Triple]) -> CallRecord:
    """The record as it will be stored: seq assigned, delta filled."""
    if record.paper_id != pid:
        raise InputError(f"call record is for paper {record.paper_id!r}, write is for {pid!r}")
    if record.seq not in (0, last_seq + 1):
        raise StoreError(
            f"call seq {record.seq} does not follow paper {pid!r}'s last call {last_seq}")
    check_record(record)
    return record.model_copy(update={
        "seq": last_seq + 1,
        "inserted": canonical_ntriples(inserted),
        "deleted": canonical_ntriples(deleted),
    })


def plan_write(pid: str, *, insert: Iterable[Triple], delete: Iterable[Triple],
               record: CallRecord | None, last_seq: int) -> WritePlan:
    check_paper_id(pid)
    inserted, deleted = checked_triples(insert, "insert"), checked_triples(delete, "delete")
    graph = graph_iri(pid)
    insert_quads = [Quad(t.subject, t.predicate, t.object, graph) for t in inserted]
    delete_quads = [Quad(t.subject, t.predicate, t.object, graph) for t in deleted]
    stored = None
    if record is not None:
        stored = next_record(record, pid, last_seq, inserted, deleted)
        insert_quads += record_quads(stored)
    return WritePlan(delete_quads, insert_quads, stored)
