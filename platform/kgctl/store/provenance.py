"""PROV-O call records: one ``prov:Activity`` per accepted call in the paper's provenance graph.

The activity IRI comes from (paper, seq), so the same calls give the same provenance. Besides the
queryable PROV-O triples, the record itself (JSON) and its delta (canonical N-Triples) are stored
so the trace can be read back exactly and replayed.

>>> from kgctl.store.base import CallRecord
>>> rec = CallRecord(paper_id="p1", seq=1, tool="add_step", arguments={"n": 1},
...                  time="2024-01-01T00:00:00+00:00")
>>> activity_iri("p1", 1).value
'https://w3id.org/kgctl/paper/p1/provenance/call/1'
>>> sorted({q.predicate.value.rsplit("#", 1)[-1] for q in record_quads(rec)})[:4]
['arguments', 'record', 'seq', 'startedAtTime']
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, Quad, Triple

from kgctl.errors import InputError
from kgctl.store.base import CallRecord
from kgctl.store.iris import BASE, provenance_graph_iri

PROV = "http://www.w3.org/ns/prov#"
OA = "http://www.w3.org/ns/oa#"
KG = BASE + "ns#"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDF_JSON = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON")
XSD_INTEGER = NamedNode("http://www.w3.org/2001/XMLSchema#integer")
XSD_DATETIME = NamedNode("http://www.w3.org/2001/XMLSchema#dateTime")

ACTIVITY = NamedNode(PROV + "Activity")
STARTED = NamedNode(PROV + "startedAtTime")
GENERATED = NamedNode(PROV + "generated")
SELECTOR = NamedNode(OA + "TextQuoteSelector")
EXACT = NamedNode(OA + "exact")
START = NamedNode(OA + "start")
END = NamedNode(OA + "end")
SEQ = NamedNode(KG + "seq")
TOOL = NamedNode(KG + "tool")
ARGUMENTS = NamedNode(KG + "arguments")
RECORD = NamedNode(KG + "record")
INSERTED = NamedNode(KG + "inserted")
DELETED = NamedNode(KG + "deleted")
EVIDENCE = NamedNode(KG + "evidence")
SECTION = NamedNode(KG + "section")

# the stored JSON leaves the delta out: it is kept in its own literals
_DELTA_FIELDS = {"inserted", "deleted"}

TRACE_QUERY = f"""
SELECT ?record ?inserted ?deleted WHERE {{
  ?call <{SEQ.value}> ?seq ; <{RECORD.value}> ?record .
  OPTIONAL {{ ?call <{INSERTED.value}> ?inserted }}
  OPTIONAL {{ ?call <{DELETED.value}> ?deleted }}
}} ORDER BY ?seq
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
    """The PROV-O quads of one call record (seq already assigned)."""
    graph = provenance_graph_iri(record.paper_id)
    call = activity_iri(record.paper_id, record.seq)
    stored = record.model_dump_json(exclude=_DELTA_FIELDS)
    arguments = json.dumps(record.arguments, sort_keys=True, ensure_ascii=False)
    triples = [
        (call, RDF_TYPE, ACTIVITY),
        (call, SEQ, Literal(str(record.seq), datatype=XSD_INTEGER)),
        (call, TOOL, Literal(record.tool)),
        (call, ARGUMENTS, Literal(arguments, datatype=RDF_JSON)),
        (call, STARTED, Literal(record.time, datatype=XSD_DATETIME)),
        (call, RECORD, Literal(stored)),
        *((call, GENERATED, NamedNode(iri)) for iri in record.iris),
    ]
    if record.inserted:
        triples.append((call, INSERTED, Literal(record.inserted)))
    if record.deleted:
        triples.append((call, DELETED, Literal(record.deleted)))
    if record.evidence is not None:
        evidence = NamedNode(call.value + "/evidence")
        ev = record.evidence
        triples += [(call, EVIDENCE, evidence), (evidence, RDF_TYPE, SELECTOR),
                    (evidence, EXACT, Literal(ev.quote))]
        if ev.section is not None:
            triples.append((evidence, SECTION, Literal(ev.section)))
        if ev.start is not None:
            triples.append((evidence, START, Literal(str(ev.start), datatype=XSD_INTEGER)))
        if ev.end is not None:
            triples.append((evidence, END, Literal(str(ev.end), datatype=XSD_INTEGER)))
    return [Quad(s, p, o, graph) for s, p, o in triples]


def record_from_row(record: Literal, inserted: Literal | None, deleted: Literal | None
                    ) -> CallRecord:
    """Inverse of record_quads for one row of TRACE_QUERY."""
    return CallRecord.model_validate_json(record.value).model_copy(update={
        "inserted": inserted.value if inserted is not None else "",
        "deleted": deleted.value if deleted is not None else "",
    })
