"""Score predicted record documents against gold ones: per category, per paper, micro over
categories, macro across them, and the field-level error table (error anatomy).

A paper or category missing on the prediction side counts all its gold slots as FN and is
listed as a problem; the rest still scores.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kgctl.evaluation.loader import Loaded, Problem
from kgctl.evaluation.records import CATEGORIES, DOCUMENTS
from kgctl.evaluation.scorer import Alignment, Counts, align
from kgctl.evaluation.slots import to_node


class FieldErrors(BaseModel):
    model_config = ConfigDict(frozen=True)
    category: str
    field: str
    tp: int
    fp: int
    fn: int


class Report(BaseModel):
    """Everything a score run found; renders to JSON and HTML."""

    model_config = ConfigDict(frozen=True)
    categories: dict[str, Counts]
    papers: dict[str, dict[str, Counts]]
    micro: Counts
    macro: dict[str, float]
    fields: tuple[FieldErrors, ...]
    problems: tuple[Problem, ...] = ()

    def to_dict(self) -> dict:
        """Plain JSON-ready dict with P/R/F1 spelled out."""
        return {
            "micro": self.micro.summary(),
            "macro": self.macro,
            "categories": {c: n.summary() for c, n in self.categories.items()},
            "papers": {p: {c: n.summary() for c, n in cats.items()}
                       for p, cats in self.papers.items()},
            "fields": [f.model_dump() for f in self.fields],
            "problems": [p.model_dump() | {"text": str(p)} for p in self.problems],
        }

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def score(gold: Loaded, pred: Loaded, *, categories: tuple[str, ...] = CATEGORIES) -> Report:
    """Score every gold paper and category against the prediction."""
    per_paper: dict[str, dict[str, Counts]] = {}
    per_category = {c: Alignment() for c in categories}
    problems = list(gold.problems) + list(pred.problems)
    for paper in sorted(gold.docs):
        for category in categories:
            gold_doc = gold.docs[paper].get(category)
            if gold_doc is None:
                continue
            pred_doc = pred.docs.get(paper, {}).get(category)
            if pred_doc is None:
                problems.append(Problem(paper=paper, category=category,
                                        message="no prediction: all gold slots count as FN"))
                pred_doc = DOCUMENTS[category]()
            counts = align(to_node(gold_doc), to_node(pred_doc))
            per_category[category].merge(counts)
            per_paper.setdefault(paper, {})[category] = counts.total
    for paper in sorted(set(pred.docs) - set(gold.docs)):
        problems.append(Problem(paper=paper, category="*", message="not in the gold set; ignored"))
    totals = {c: a.total for c, a in per_category.items()}
    micro = sum(totals.values(), Counts())
    scored = [t for t in totals.values() if t.tp + t.fp + t.fn]
    macro = {
        "precision": _mean([t.precision for t in scored]),
        "recall": _mean([t.recall for t in scored]),
        "f1": _mean([t.f1 for t in scored]),
    }
    return Report(categories=totals, papers=per_paper, micro=micro, macro=macro,
                  fields=_field_table(per_category), problems=tuple(problems))


def _field_table(per_category: dict[str, Alignment]) -> tuple[FieldErrors, ...]:
    rows = []
    for category, alignment in per_category.items():
        paths = sorted({path for path, _ in alignment.fields})
        for path in paths:
            n = {k: alignment.fields[(path, k)] for k in ("tp", "fp", "fn")}
            rows.append(FieldErrors(category=category, field=path, **n))
    return tuple(sorted(rows, key=lambda r: (-(r.fp + r.fn), r.category, r.field)))


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 1.0
