"""Fuzzy entity lookup over the graph's own labels (rapidfuzz), optionally within a class.

Indexed texts: the values of the label predicates the schema finds (``rdfs:label``,
``skos:prefLabel`` / ``altLabel``, ``foaf:name``, ``schema:name``, ``dcterms:title``, ... and the
text properties whose local name reads like a name or identifier). A candidate must score at
least ``MATCH_THRESHOLD``: below it the answer is an explicit "no match", never an unrelated
label that happens to share a few letters.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyoxigraph as ox
from rapidfuzz import fuzz, process, utils

from kgctl.retrieval.feedback import Option
from kgctl.retrieval.schema import Schema
from kgctl.store.base import GraphStore
from kgctl.store.sparql import term_to_sparql

AMBIGUITY_MARGIN = 5.0  # points of score within which two different entities are a tie
MATCH_THRESHOLD = 75.0  # WRatio below this is no match ("accordion" vs "London" scores 60)
CANDIDATE_POOL = 20  # texts scored per requested candidate before grouping by entity


@dataclass(frozen=True)
class Found:
    options: list[Option]
    ambiguous: bool


class LabelIndex:
    def __init__(self, texts: list[str], owners: list[str], classes: dict[str, tuple[str, ...]],
                 schema: Schema):
        self.texts = texts
        self.owners = owners
        self.classes = classes
        self.schema = schema

    @classmethod
    def build(cls, store: GraphStore, schema: Schema) -> LabelIndex:
        values = " ".join(term_to_sparql(ox.NamedNode(p)) for p in schema.label_properties())
        sparql = (f"SELECT DISTINCT ?s ?text WHERE {{ VALUES ?p {{ {values} }} ?s ?p ?text "
                  "FILTER(isLiteral(?text) && isIRI(?s)) }")
        texts, owners = [], []
        for row in store.query(sparql, union=True):
            texts.append(row["text"].value)
            owners.append(row["s"].value)
        types: dict[str, set[str]] = {}
        for row in store.query("SELECT DISTINCT ?s ?t WHERE { ?s a ?t }", union=True):
            types.setdefault(row["s"].value, set()).add(row["t"].value)
        return cls(texts, owners, {k: tuple(sorted(v)) for k, v in types.items()}, schema)

    def search(self, text: str, *, cls: str | None = None, k: int = 5) -> Found:
        allowed = [i for i, owner in enumerate(self.owners)
                   if cls is None or any(self.schema.compatible(t, cls)
                                         for t in self.classes.get(owner, ()))]
        choices = {i: self.texts[i] for i in allowed}
        hits = process.extract(text, choices, scorer=fuzz.WRatio, processor=utils.default_process,
                               limit=max(k, 1) * CANDIDATE_POOL, score_cutoff=MATCH_THRESHOLD)
        best: dict[str, tuple[float, str]] = {}
        for matched, score, i in hits:
            owner = self.owners[i]
            exact = utils.default_process(matched) == utils.default_process(text)
            score = 100.0 + 1.0 if exact else score  # an exact label outranks fuzzy ties
            if owner not in best or score > best[owner][0]:
                best[owner] = (score, matched)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
        options = [Option(rank=r, value=iri, label=label, score=round(min(score, 100.0), 1),
                          classes=tuple(self.schema.ir.curie(c) for c in self.classes.get(iri, ())))
                   for r, (iri, (score, label)) in enumerate(ranked)]
        ambiguous = len(ranked) > 1 and ranked[0][1][0] - ranked[1][1][0] < AMBIGUITY_MARGIN
        return Found(options=options, ambiguous=ambiguous)
