"""The evidence behind a paper graph: every accepted call's quote located in the paper text.

A quote is located at its recorded offsets when the text there matches it, else searched in
the whole text; both comparisons are made after whitespace normalisation (runs of whitespace
are one space, so line breaks of a PDF do not matter). A quote found nowhere is flagged. Each
entity (an IRI a call created or changed) collects the quotes of the calls behind it.

The paper text is kept in the paper's provenance graph (``kg:paperText``) by ``kgctl
extract``; for other papers it is read from the paper file (same ingestion, same offsets).

>>> text = "Methods of run-1.\\nCuSO4 was   added.."
>>> locate(text, "CuSO4 was added..", None, None)
(18, 37)
>>> locate(text, "Methods of run-1.", 0, 17), locate(text, "run-2", None, None)
((0, 17), None)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict
from pyoxigraph import NamedNode

from kgctl.papers.text import paper_text
from kgctl.store.base import CallRecord, GraphStore
from kgctl.store.merged import Link, paper_links

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
# an entity's name as shown: its label and the local name of its class
LABEL_QUERY = (f"SELECT ?s ?l ?t WHERE {{ ?s <{RDFS_LABEL}> ?l "
               "OPTIONAL { ?s a ?t FILTER(isIRI(?t)) } }")
_SPACE = re.compile(r"\s+")


class Span(BaseModel):
    """One call's quote and where it sits in the text (None: not found, flagged)."""

    model_config = ConfigDict(frozen=True)
    seq: int
    tool: str
    quote: str
    section: str | None = None
    start: int | None = None
    end: int | None = None
    iris: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return self.start is not None


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    label: str | None = None
    calls: tuple[int, ...] = ()  # seq of the calls that created or changed it
    identity: Link | None = None  # its canonical identity in the merged view (store.merged)


class EvidenceView(BaseModel):
    """A paper's text (when known), its located quotes, flagged ones, and entities."""

    model_config = ConfigDict(frozen=True)
    paper: str
    text: str | None
    spans: tuple[Span, ...]
    without_evidence: tuple[tuple[int, str], ...]  # (seq, tool) of calls that quote nothing
    entities: tuple[Entity, ...]

    @property
    def flagged(self) -> tuple[Span, ...]:
        return tuple(s for s in self.spans if not s.found)


def build_view(paper: str, text: str | None, records: Iterable[CallRecord],
               labels: dict[str, str] | None = None,
               identities: dict[str, Link] | None = None) -> EvidenceView:
    """The evidence view of one paper from its call records (and text, when known)."""
    labels, identities = labels or {}, identities or {}
    spans, bare, touched = [], [], {}
    for record in records:
        for iri in record.iris:
            touched.setdefault(iri, []).append(record.seq)
        evidence = record.evidence
        if evidence is None or not evidence.quote.strip():
            bare.append((record.seq, record.tool))
            continue
        where = locate(text, evidence.quote, evidence.start, evidence.end) if text else None
        spans.append(Span(seq=record.seq, tool=record.tool, quote=evidence.quote,
                          section=evidence.section, start=where[0] if where else None,
                          end=where[1] if where else None, iris=record.iris))
    entities = tuple(Entity(iri=iri, label=labels.get(iri), calls=tuple(seqs),
                            identity=identities.get(iri))
                     for iri, seqs in sorted(touched.items(),
                                             key=lambda kv: (labels.get(kv[0]) is None,
                                                             labels.get(kv[0], kv[0]))))
    return EvidenceView(paper=paper, text=text, spans=tuple(spans),
                        without_evidence=tuple(bare), entities=entities)


# Pure functions


def squeeze(text: str) -> tuple[str, list[int]]:
    """Whitespace runs as one space, with the original offset of every kept character.

    >>> squeeze("a \\n b")
    ('a b', [0, 1, 4])
    """
    out, where, last_space = [], [], False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not last_space:
                out.append(" ")
                where.append(i)
            last_space = True
        else:
            out.append(ch)
            where.append(i)
            last_space = False
    return "".join(out), where


def locate(text: str, quote: str, start: int | None, end: int | None
           ) -> tuple[int, int] | None:
    """(start, end) of the quote in text, preferring the recorded offsets; None: not found."""
    wanted = _SPACE.sub(" ", quote).strip()
    if not wanted:
        return None
    if start is not None and end is not None and 0 <= start < end <= len(text) \
            and _SPACE.sub(" ", text[start:end]).strip() == wanted:
        return start, end
    squeezed, where = squeeze(text)
    at = squeezed.find(wanted)
    if at < 0:
        return None
    return where[at], where[at + len(wanted) - 1] + 1


# The store side


def entity_names(rows: Iterable) -> dict[str, str]:
    """IRI -> "label (Class)" from the rows of LABEL_QUERY."""
    names: dict[str, str] = {}
    for row in rows:
        if isinstance(row["s"], NamedNode):
            kind = row["t"].value.rsplit("#", 1)[-1].rsplit("/", 1)[-1] if row["t"] else ""
            names.setdefault(row["s"].value, f"{row['l'].value} ({kind})" if kind
                             else row["l"].value)
    return names


def view_from_store(store: GraphStore, paper: str, *, text: str | None = None
                    ) -> EvidenceView:
    """The view of a paper in a store; `text` (e.g. re-ingested) wins over the stored one."""
    labels = entity_names(store.query(LABEL_QUERY, paper_id=paper))
    return build_view(paper, text if text is not None else paper_text(store, paper),
                      store.trace(paper), labels, paper_links(store, paper))
