"""Call records: one ``kg:Call`` per accepted call in the paper's provenance graph.

kgctl's own vocabulary (``https://w3id.org/kgctl/ns#``), never PROV-O: a domain ontology may use
PROV-O itself, and its ``prov:`` data must not mix with kgctl's bookkeeping in query answers.
The call IRI comes from (paper, seq), so the same calls give the same provenance. Besides the
queryable triples (type, seq, tool, start time, generated IRIs, evidence quote), the whole
record — arguments, evidence location and the delta as canonical N-Triples — is stored as one
``rdf:JSON`` literal so the trace can be read back exactly and replayed.

>>> from kgctl.store.base import CallRecord
>>> rec = CallRecord(paper_id="p1", seq=1, tool="add_step", arguments={"n": 1},
...                  time="2024-01-01T00:00:00+00:00")
>>> activity_iri("p1", 1).value
'https://w3id.org/kgctl/paper/p1/provenance/call/1'
>>> sorted({q.predicate.value.rsplit("#", 1)[-1] for q in record_quads(rec)})
['record', 'seq', 'startedAt', 'tool', 'type']
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, Quad, Triple

from kgctl.errors import InputError
from kgctl.store.base import CallRecord
from kgctl.store.iris import BASE, provenance_graph_iri

KG = BASE + "ns#"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDF_JSON = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON")
XSD_INTEGER = NamedNode("http://www.w3.org/2001/XMLSchema#integer")
XSD_DATETIME = NamedNode("http://www.w3.org/2001/XMLSchema#dateTime")

CALL = NamedNode(KG + "Call")
STARTED = NamedNode(KG + "startedAt")
GENERATED = NamedNode(KG + "generated")
SEQ = NamedNode(KG + "seq")
TOOL = NamedNode(KG + "tool")
QUOTE = NamedNode(KG + "quote")
RECORD = NamedNode(KG + "record")

TRACE_QUERY = f"""
SELECT ?record WHERE {{ ?call <{SEQ.value}> ?seq ; <{RECORD.value}> ?record }} ORDER BY ?seq
"""
LAST_SEQ_QUERY = f"SELECT (MAX(?seq) AS ?last) WHERE {{ ?call <{SEQ.value}> ?seq }}"


def utc_now() -> str:
    """Current time as ISO 8601 UTC, for CallRecord.time."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def activity_iri(pid: str, seq: int) -> NamedNode:
    return NamedNode(f"{provenance_graph_iri(pid).value}/call/{seq}")


def canonical_ntriples(triples: Iterable[Triple]) -> str:
    """Sorted, de-duplicated N-Triples lines: the canonical text of a delta."""
    return "".join(sorted({f"{t} .\n" for t in triples}))


def check_time(time: str) -> None:
    try:
        datetime.fromisoformat(time)
    except ValueError:
        raise InputError(f"call time is not ISO 8601: {time!r}") from None


def record_quads(record: CallRecord) -> list[Quad]:
    """The quads of one call record (seq assigned, delta filled).

    Kept compact on purpose (write latency grows with the number of quads): the queryable
    essentials as triples, the whole record (arguments, evidence location, delta) as one JSON
    literal from which the trace is read back exactly.
    """
    graph = provenance_graph_iri(record.paper_id)
    call = activity_iri(record.paper_id, record.seq)
    quads = [
        Quad(call, RDF_TYPE, CALL, graph),
        Quad(call, SEQ, Literal(str(record.seq), datatype=XSD_INTEGER), graph),
        Quad(call, TOOL, Literal(record.tool), graph),
        Quad(call, STARTED, Literal(record.time, datatype=XSD_DATETIME), graph),
        Quad(call, RECORD, Literal(record.model_dump_json(), datatype=RDF_JSON), graph),
    ]
    quads += [Quad(call, GENERATED, NamedNode(iri), graph) for iri in record.iris]
    if record.evidence is not None:
        quads.append(Quad(call, QUOTE, Literal(record.evidence.quote), graph))
    return quads


def record_from_literal(record: Literal) -> CallRecord:
    """Inverse of record_quads, from the stored JSON literal."""
    return CallRecord.model_validate_json(record.value)
