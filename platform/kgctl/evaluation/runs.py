"""The extraction run report: what `kgctl extract` did, per paper and plan step, from its run
traces (``<paper>.trace.json``) and, when given, the store's graphs.

Read from a trace (format ``kgctl-agent-trace/1``), per step: model turns (assistant messages),
requests and retries, tokens in/out and cost (``usage``; cost is absent when the model has no
price), graph-tool calls accepted and refused (by the feedback envelope's ``code``), repaired
(a refused call followed in the same step by an accepted call of the same tool), and the step's
status. Optional per-step fields are shown when a trace has them: ``seconds``,
``finish_reasons`` ({reason: count}) and ``outcome``. Traces are read as plain JSON so that
older and newer traces both load; a file that is not a trace is listed as a problem.

>>> step = {"step": "core", "status": "done", "messages": [{"role": "assistant"}] * 3,
...         "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cost_usd": None},
...         "calls": [{"tool": "t", "is_error": True, "result": '{"code": "enum_value"}'},
...                   {"tool": "t", "is_error": False, "result": "ok"},
...                   {"tool": "search", "is_error": False, "local": True, "result": ""}]}
>>> row = step_row(step)
>>> (row.turns, row.accepted, row.refused, row.repaired, row.refused_by_code, row.cost_usd)
(3, 1, 1, 1, {'enum_value': 1}, None)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kgctl.evaluation.source import Source, make_source
from kgctl.papers.formats import TRACE_FORMAT, TRACE_SUFFIX


class StepRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    step: str
    status: str
    turns: int
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    accepted: int = 0
    refused: int = 0
    repaired: int = 0
    refused_by_code: dict[str, int] = {}
    agent_calls: int = 0  # search and review calls answered by the agent itself
    seconds: float | None = None
    finish_reasons: dict[str, int] | None = None
    outcome: str | None = None


class PaperRun(BaseModel):
    model_config = ConfigDict(frozen=True)
    paper: str
    model: str
    server: str
    status: str
    error: str | None = None
    feedback: bool = True
    steps: tuple[StepRow, ...] = ()
    triples: int | None = None  # final graph size, when the store was read

    def total(self, name: str) -> float | int | None:
        """Sum of a step field; None when a step lacks it (e.g. cost without a price)."""
        values = [getattr(s, name) for s in self.steps]
        return None if any(v is None for v in values) else sum(values)


class RunReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    source: Source
    folder: str
    papers: tuple[PaperRun, ...]
    problems: tuple[str, ...] = ()

    def batch(self) -> dict[str, Any]:
        """The summary across papers."""
        keys = ("turns", "prompt_tokens", "completion_tokens", "accepted", "refused",
                "repaired", "cost_usd", "seconds")
        totals: dict[str, Any] = {}
        for key in keys:
            values = [p.total(key) for p in self.papers]
            totals[key] = None if any(v is None for v in values) else sum(values)
        codes: Counter = Counter()
        for paper in self.papers:
            for step in paper.steps:
                codes.update(step.refused_by_code)
        sizes = [p.triples for p in self.papers]
        return {"papers": len(self.papers),
                "by_status": dict(Counter(p.status for p in self.papers)),
                **totals, "refused_by_code": dict(codes.most_common()),
                "triples": None if None in sizes else sum(sizes)}

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source.headline, "provenance": self.source.to_dict(),
                "folder": self.folder, "batch": self.batch(),
                "papers": [p.model_dump(mode="json") for p in self.papers],
                "problems": list(self.problems)}


def load_runs(folder: Path, *, graph_sizes: dict[str, int] | None = None,
              ontology: Sequence[Path] = ()) -> RunReport:
    """Every run trace of a `kgctl extract --runs` folder, in paper order."""
    papers, problems = [], []
    for path in sorted(folder.glob(f"*{TRACE_SUFFIX}")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"{path.name}: not readable JSON ({exc})")
            continue
        if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
            problems.append(f"{path.name}: not a {TRACE_FORMAT} trace")
            continue
        paper = str(data.get("paper_id", path.name.removesuffix(TRACE_SUFFIX)))
        papers.append(PaperRun(
            paper=paper, model=str(data.get("model", "?")),
            server=str(data.get("base_url", "?")), status=str(data.get("status", "?")),
            error=data.get("error"), feedback=bool(data.get("feedback", True)),
            steps=tuple(step_row(s) for s in data.get("steps") or [] if isinstance(s, dict)),
            triples=(graph_sizes or {}).get(paper)))
    models = sorted({p.model for p in papers}) or ["?"]
    servers = sorted({p.server for p in papers}) or ["?"]
    source = make_source("extraction", model=", ".join(models), server=", ".join(servers),
                         origin=str(folder), ontology=ontology)
    return RunReport(source=source, folder=str(folder), papers=tuple(papers),
                     problems=tuple(problems))


# Pure functions


def step_row(step: dict[str, Any]) -> StepRow:
    """One step of a trace as a report row (unknown fields ignored, missing ones defaulted)."""
    usage = step.get("usage") or {}
    calls = [c for c in step.get("calls") or [] if isinstance(c, dict)]
    graph = [c for c in calls if not c.get("local")]
    refused_codes: Counter = Counter()
    pending: set[str] = set()  # tools with a refusal not yet followed by an accepted call
    repaired = 0
    for call in graph:
        tool = str(call.get("tool"))
        if call.get("is_error"):
            refused_codes[refusal_code(call.get("result"))] += 1
            pending.add(tool)
        elif tool in pending:
            repaired += 1
            pending.discard(tool)
    turns = step.get("turns")
    if not isinstance(turns, int):
        turns = sum(1 for m in step.get("messages") or []
                    if isinstance(m, dict) and m.get("role") == "assistant")
    cost = usage.get("cost_usd")
    return StepRow(
        step=str(step.get("step", "?")), status=str(step.get("status", "?")), turns=turns,
        requests=_count(usage.get("requests")), retries=_count(usage.get("retries")),
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        accepted=sum(1 for c in graph if not c.get("is_error")),
        refused=sum(refused_codes.values()), repaired=repaired,
        refused_by_code=dict(refused_codes), agent_calls=len(calls) - len(graph),
        **optional_fields(step))


def _count(value: Any) -> int:
    return value if isinstance(value, int) else 0


def optional_fields(step: dict[str, Any]) -> dict[str, Any]:
    """The optional per-step fields, kept only when they have a usable shape.

    >>> optional_fields({"seconds": 2, "finish_reasons": ["stop", "tool_calls", "stop"]})
    {'seconds': 2.0, 'finish_reasons': {'stop': 2, 'tool_calls': 1}}
    >>> optional_fields({"seconds": "soon", "finish_reasons": {"stop": 1}, "outcome": "done"})
    {'finish_reasons': {'stop': 1}, 'outcome': 'done'}
    """
    found: dict[str, Any] = {}
    if isinstance(step.get("seconds"), int | float):
        found["seconds"] = float(step["seconds"])
    reasons = step.get("finish_reasons")
    if isinstance(reasons, list):
        found["finish_reasons"] = dict(Counter(str(r) for r in reasons))
    elif isinstance(reasons, dict):
        found["finish_reasons"] = {str(k): v for k, v in reasons.items() if isinstance(v, int)}
    if isinstance(step.get("outcome"), str):
        found["outcome"] = step["outcome"]
    return found


def refusal_code(result: Any) -> str:
    """The feedback envelope's code of a refused call ('unreadable' when there is none).

    >>> refusal_code('{"status": "rejected", "code": "cardinality"}'), refusal_code("boom")
    ('cardinality', 'unreadable')
    """
    try:
        data = json.loads(result) if isinstance(result, str) else result
    except ValueError:
        return "unreadable"
    code = data.get("code") if isinstance(data, dict) else None
    return str(code) if code else "unreadable"
