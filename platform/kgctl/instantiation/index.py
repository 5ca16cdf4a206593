"""What a paper holds, for resolving references fast: classes, labels and natural-key values
of its entities.

Loaded once per paper from the store, then kept current from the triples each accepted call
writes (the server owns the store, so no other writer changes the paper under it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pyoxigraph import NamedNode, Triple
from rapidfuzz import fuzz, process

from kgctl.store.base import GraphStore
from kgctl.store.iris import normalise_key, normalise_label

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
NEAREST = 5  # candidates shown in `allowed`
MIN_SCORE = 50  # rapidfuzz WRatio below which a label is not offered

_ENTITIES = (f"SELECT ?s ?t ?l WHERE {{ ?s <{RDF_TYPE}> ?t "
             f"OPTIONAL {{ ?s <{RDFS_LABEL}> ?l }} }}")
_KEYED = "SELECT ?s ?v WHERE { ?s ?p ?v }"


class PaperIndex:
    def __init__(self, key_properties: Iterable[str] = ()) -> None:
        self.types: dict[str, set[str]] = defaultdict(set)
        self.labels: dict[str, set[str]] = defaultdict(set)
        self.by_label: dict[str, set[str]] = defaultdict(set)
        self.key_properties = frozenset(key_properties)
        # (key property, normalised value) -> entities holding it
        self.by_key: dict[tuple[str, str], set[str]] = defaultdict(set)

    @classmethod
    def load(cls, store: GraphStore, paper_id: str, *,
             key_properties: Iterable[str] = ()) -> PaperIndex:
        index = cls(key_properties)
        if store.has_paper(paper_id):
            for row in store.query(_ENTITIES, paper_id=paper_id):
                subject = row["s"]
                if isinstance(subject, NamedNode):
                    index.types[subject.value].add(row["t"].value)
                    if row["l"] is not None:
                        index._add_label(subject.value, row["l"].value)
            for prop in sorted(index.key_properties):
                for row in store.query(_KEYED, bindings={"p": NamedNode(prop)},
                                       paper_id=paper_id):
                    index.by_key[(prop, normalise_key(row["v"].value))].add(row["s"].value)
        return index

    def _add_label(self, iri: str, label: str) -> None:
        self.labels[iri].add(label)
        self.by_label[normalise_label(label)].add(iri)

    def apply(self, *, insert: Iterable[Triple], delete: Iterable[Triple]) -> None:
        """Keep the index current after a write."""
        for t in delete:
            s, p = t.subject.value, t.predicate.value
            if p == RDF_TYPE:
                self.types[s].discard(t.object.value)
                if not self.types[s]:
                    del self.types[s]
            elif p == RDFS_LABEL:
                self.labels[s].discard(t.object.value)
                self.by_label[normalise_label(t.object.value)].discard(s)
            elif p in self.key_properties:
                self.by_key[(p, normalise_key(t.object.value))].discard(s)
        for t in insert:
            s, p = t.subject.value, t.predicate.value
            if p == RDF_TYPE:
                self.types[s].add(t.object.value)
            elif p == RDFS_LABEL:
                self._add_label(s, t.object.value)
            elif p in self.key_properties:
                self.by_key[(p, normalise_key(t.object.value))].add(s)

    def find_label(self, label: str) -> set[str]:
        return {iri for iri in self.by_label.get(normalise_label(label), ()) if iri in self.types}

    def find_key(self, prop: str, value: str) -> set[str]:
        """Entities whose key property `prop` has `value` (case kept: formulas are keys)."""
        return {iri for iri in self.by_key.get((prop, normalise_key(value)), ())
                if iri in self.types}

    def label_of(self, iri: str) -> str:
        return min(self.labels.get(iri) or {""})

    def entities(self) -> list[str]:
        return sorted(self.types)

    def nearest(self, text: str, candidates: Iterable[str]) -> tuple[str, ...]:
        """The labels (or IRIs when unlabelled) of `candidates` closest to `text`."""
        names = {iri: self.label_of(iri) or iri for iri in candidates}
        if not names:
            return ()
        hits = process.extract(text, names, scorer=fuzz.WRatio, limit=NEAREST,
                               score_cutoff=MIN_SCORE)
        picked = [key for _, _, key in sorted(hits, key=lambda h: (-h[1], h[2]))]
        if not picked:
            picked = sorted(names)[:NEAREST]
        return tuple(f"{names[iri]} <{iri}>" if names[iri] != iri else iri for iri in picked)
