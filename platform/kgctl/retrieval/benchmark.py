"""The question benchmark: reference SPARQL vs. reference tool workflows, and the metrics.

A question file (YAML list) holds, per question: id, level, question, sparql (reference) and
workflow (tool calls in order). In workflow arguments ``$q`` is the container made by the last
new_query and ``$name`` / ``$name.k`` the top / k-th candidate IRI of a find_entities step saved
as ``name``. A question the tools cannot build lists the missing capability instead.

Metrics per question compare answer sets (rows as tuples, column order as projected):
precision-oriented overlap |W ∩ R| / |W|, recall |W ∩ R| / |R|, F1, and exact equality.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict

from kgctl.errors import InputError
from kgctl.retrieval.engine import MAX_ROWS, QueryEngine
from kgctl.retrieval.feedback import Rejected, reject

Row = tuple[str | None, ...]


class Question(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    level: Literal["easy", "medium", "hard", "very hard"]
    question: str
    sparql: str
    workflow: tuple[dict[str, Any], ...] = ()
    missing_capability: str | None = None


class Outcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    level: str
    reference_rows: int
    workflow_rows: int
    precision: float
    recall: float
    f1: float
    constructible: bool  # the workflow ran and its answer equals the reference answer
    error: str = ""


class Report(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    questions: int
    constructible: int
    share_constructible: float
    mean_precision: float
    mean_f1: float
    outcomes: tuple[Outcome, ...]
    not_constructible: dict[str, str]  # id -> missing capability or error


def load_questions(path: Path) -> list[Question]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return [Question.model_validate(item) for item in data]
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise InputError(f"cannot read questions {path}: {exc}") from None


def reference_answer(engine: QueryEngine, question: Question) -> set[Row]:
    try:
        solutions = engine.store.query(question.sparql, union=True)
        names = [v.value for v in solutions.variables]
        return {tuple(_text(s[n]) for n in names) for s in solutions}
    except SyntaxError as exc:
        raise InputError(f"question {question.id}: invalid reference SPARQL: {exc}") from None


def run_workflow(engine: QueryEngine, question: Question) -> set[Row]:
    session = f"benchmark:{question.id}"
    saved: dict[str, list[str]] = {}
    query_id = ""
    answer: set[Row] = set()
    for step in question.workflow:
        tool = step["tool"]
        args = {k: _resolve(v, saved, query_id) for k, v in step.get("args", {}).items()}
        if tool in ("find_entities",):
            found = engine.find_entities(**args)
            saved[step.get("save", "e")] = [c.value for c in found.candidates]
            continue
        method = getattr(engine, tool)
        if tool == "new_query":
            query_id = method(session, **args).query_id
        elif tool == "execute_query":
            result = method(session, query_id, limit=MAX_ROWS, **args)
            answer = set(result.rows)
        else:
            method(session, query_id, **args)
    return answer


def score(reference: set[Row], answer: set[Row]) -> tuple[float, float, float]:
    """(precision, recall, F1) of an answer set; two empty sets agree fully.

    >>> score({("a",), ("b",)}, {("a",)})
    (1.0, 0.5, 0.667)
    """
    if not reference and not answer:
        return 1.0, 1.0, 1.0
    hit = len(reference & answer)
    p = hit / len(answer) if answer else 0.0
    r = hit / len(reference) if reference else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return round(p, 3), round(r, 3), round(f1, 3)


def evaluate(engine: QueryEngine, questions: list[Question]) -> Report:
    outcomes, missing = [], {}
    for q in questions:
        reference = reference_answer(engine, q)
        error = ""
        answer: set[Row] = set()
        if q.missing_capability:
            error = q.missing_capability
        else:
            try:
                answer = run_workflow(engine, q)
            except Rejected as rejected:
                error = str(rejected)
        p, r, f1 = score(reference, answer) if not error else (0.0, 0.0, 0.0)
        ok = not error and answer == reference
        if not ok:
            missing[q.id] = error or "answer differs from the reference"
        outcomes.append(Outcome(id=q.id, level=q.level, reference_rows=len(reference),
                                workflow_rows=len(answer), precision=p, recall=r, f1=f1,
                                constructible=ok, error=error))
    n = len(outcomes)
    built = sum(o.constructible for o in outcomes)
    return Report(questions=n, constructible=built, share_constructible=round(built / n, 3),
                  mean_precision=round(sum(o.precision for o in outcomes) / n, 3),
                  mean_f1=round(sum(o.f1 for o in outcomes) / n, 3),
                  outcomes=tuple(outcomes), not_constructible=missing)


def _resolve(value: Any, saved: dict[str, list[str]], query_id: str) -> Any:
    if isinstance(value, list):
        return [_resolve(v, saved, query_id) for v in value]
    if not isinstance(value, str) or not value.startswith("$"):
        return value
    if value == "$q":
        return query_id
    name, _, rank = value[1:].partition(".")
    candidates = saved.get(name, [])
    index = int(rank or 0)
    if index >= len(candidates):
        raise reject("no_candidate", f"workflow: no candidate {value}", field="entities")
    return candidates[index]


def _text(term) -> str | None:
    return None if term is None else term.value
