"""Fuzzy entity lookup over the graph's own labels (rapidfuzz), optionally within a class.

Indexed texts: ``rdfs:label`` and every string-valued datatype property of the IR whose local
name reads like a name, formula or identifier (``LABELLIKE``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyoxigraph as ox
from rapidfuzz import fuzz, process, utils

from kgctl.retrieval.feedback import Option
from kgctl.retrieval.schema import RDFS_LABEL, XSD, Schema
from kgctl.store.base import GraphStore
from kgctl.store.sparql import term_to_sparql

LABELLIKE = re.compile(r"(label|name|formula|number|identifier|symbol)", re.IGNORECASE)
AMBIGUITY_MARGIN = 5.0  # points of score within which two different entities are a tie
MIN_SCORE = 50.0
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
        props = [RDFS_LABEL] + sorted(
            p.iri for p in schema.ir.properties.values()
            if p.kind == "datatype" and (not p.range or p.range[0] == XSD + "string")
            and LABELLIKE.search(p.name))
        values = " ".join(term_to_sparql(ox.NamedNode(p)) for p in props)
        sparql = (f"SELECT DISTINCT ?s ?text WHERE {{ VALUES ?p {{ {values} }} ?s ?p ?text "
                  "FILTER(isLiteral(?text)) }")
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
                               limit=max(k, 1) * CANDIDATE_POOL, score_cutoff=MIN_SCORE)
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
