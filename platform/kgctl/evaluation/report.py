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
from kgctl.evaluation.schema import record_schema
from kgctl.evaluation.scorer import STRICT, Alignment, Counts, ScoringRule, align
from kgctl.evaluation.slots import to_node
from kgctl.evaluation.source import Source


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
    scorer: str = STRICT.name
    empty: float | None = None  # the scorer's value of a 0/0 ratio
    source: Source | None = None
    compatible: Report | None = None  # the same graphs under the published protocol's rules

    def metrics(self, counts: Counts) -> dict[str, float | int]:
        """Counts with P/R/F1 in this report's scorer's arithmetic."""
        return counts.summary(empty=self.empty)

    def to_dict(self) -> dict:
        """Plain JSON-ready dict with P/R/F1 spelled out; the source comes first."""
        head = {} if self.source is None else {"source": self.source.headline,
                                                "provenance": self.source.to_dict()}
        data = head | {
            "scorer": self.scorer,
            "micro": self.metrics(self.micro),
            "macro": self.macro,
            "categories": {c: self.metrics(n) for c, n in self.categories.items()},
            "papers": {p: {c: self.metrics(n) for c, n in cats.items()}
                       for p, cats in self.papers.items()},
            "fields": [f.model_dump() for f in self.fields],
            "problems": [p.model_dump() | {"text": str(p)} for p in self.problems],
        }
        if self.compatible is not None:
            inner = self.compatible.to_dict()
            data["compatible"] = {k: inner[k] for k in ("scorer", "micro", "macro", "categories")}
        return data

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def score(gold: Loaded, pred: Loaded, *, categories: tuple[str, ...] | None = None,
          rule: ScoringRule = STRICT) -> Report:
    """Score every gold paper and category (default: the record schema's) against the
    prediction."""
    schema = record_schema()
    categories = categories if categories is not None else schema.categories
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
                pred_doc = schema.documents[category]()
            counts = align(to_node(gold_doc), to_node(pred_doc), agree=rule.agree,
                           uncounted=rule.uncounted.get(category, frozenset()))
            per_category[category].merge(counts)
            per_paper.setdefault(paper, {})[category] = counts.total
    for paper in sorted(set(pred.docs) - set(gold.docs)):
        problems.append(Problem(paper=paper, category="*", message="not in the gold set; ignored"))
    totals = {c: a.total for c, a in per_category.items()}
    micro = sum(totals.values(), Counts())
    scored = [t.summary(empty=rule.empty) for t in totals.values() if t.tp + t.fp + t.fn]
    macro = {k: _mean([float(s[k]) for s in scored]) for k in ("precision", "recall", "f1")}
    return Report(categories=totals, papers=per_paper, micro=micro, macro=macro,
                  fields=_field_table(per_category), problems=tuple(problems),
                  scorer=rule.name, empty=rule.empty)


def score_both(gold: Loaded, pred: Loaded, *, source: Source | None = None) -> Report:
    """The strict report carrying the one of the record schema's second rule (a published
    protocol, when it has one) and the source."""
    strict = score(gold, pred)
    rule = record_schema().compatible
    return strict.model_copy(update={
        "source": source, "compatible": score(gold, pred, rule=rule) if rule else None})


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


def summary_lines(report: Report) -> list[str]:
    """The terminal summary: source first, then both scorers' figures and the problems."""
    lines = [] if report.source is None else [f"source: {report.source.first_line}"]
    for part in (report, report.compatible):
        if part is None:
            continue
        m = part.metrics(part.micro)
        lines.append(f"[{part.scorer}] micro P {m['precision']:.3f} R {m['recall']:.3f} "
                     f"F1 {m['f1']:.3f}  (TP {m['tp']} FP {m['fp']} FN {m['fn']})")
        for name, counts in part.categories.items():
            c = part.metrics(counts)
            lines.append(f"  {name:17s} P {c['precision']:.3f} R {c['recall']:.3f} "
                         f"F1 {c['f1']:.3f}")
    lines.append(f"[{report.scorer}] macro F1 {report.macro['f1']:.3f}; "
                 f"{len(report.problems)} problem(s)")
    lines += [f"  problem: {problem}" for problem in report.problems]
    return lines
