"""Extraction of a batch of papers: parallel workers, one graph per paper, resumable.

Each worker owns one paper at a time and writes only that paper's graph (through its own MCP
session). A paper whose trace says "complete" is skipped on the next run; a paper whose run was
interrupted (trace "running" or "failed") has its partial graph dropped and is redone. A graph
that exists without a trace of ours is never touched unless ``replace`` is given. The external
tool servers the plan's steps use are reached once for the whole batch; one that is not
available is named once, and the papers run without its tools.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kgctl.agent.aio import first_kgctl_error
from kgctl.agent.external import ToolServers, tool_servers
from kgctl.agent.llm import ChatClient, LLMSettings
from kgctl.agent.loop import DEFAULT_MAX_ITERATIONS, run_paper
from kgctl.agent.search import DEFAULT_LAMBDA
from kgctl.agent.session import paper_tools
from kgctl.agent.trace import AgentTrace, StepTrace
from kgctl.compiler.plan import Plan
from kgctl.compiler.spec import ToolSurface
from kgctl.errors import InputError, KgctlError
from kgctl.ontology.ir import OntologyIR
from kgctl.papers.formats import TRACE_SUFFIX
from kgctl.papers.ingest import Document
from kgctl.papers.text import store_paper_text
from kgctl.store.base import GraphStore

DEFAULT_WORKERS = 2
# nothing_extracted: the run ended but no graph-tool call was accepted (the paper's graph is
# empty), e.g. a model that does not call tools.
Outcome = Literal["complete", "skipped", "failed", "iteration_limit", "nothing_extracted"]
# Step statuses worth a warning (besides too_large, whose error says it all).
WARN_STATUSES = {"empty": "wrote nothing", "failed": "failed"}


class PaperSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    paper_id: str
    outcome: Outcome
    steps: int = 0
    accepted: int = 0
    rejected: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    seconds: float = 0.0
    error: str | None = None
    steps_without_writes: list[str] = []  # "step: status" of the steps that wrote nothing


class BatchOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    out_dir: Path
    workers: int = DEFAULT_WORKERS
    feedback: bool = True
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    lam: float = DEFAULT_LAMBDA
    replace: bool = False
    tool_servers: dict[str, str] = {}  # server name -> URL or "off" (default: its command)


Progress = Callable[[str, str], None]  # (paper id, what happened)


def trace_path(out_dir: Path, paper_id: str) -> Path:
    return out_dir / f"{paper_id}{TRACE_SUFFIX}"


async def extract_batch(
    documents: Sequence[Document],
    *,
    ir: OntologyIR,
    surface: ToolSurface,
    plan: Plan,
    store: GraphStore,
    settings: LLMSettings,
    options: BatchOptions,
    progress: Progress | None = None,
) -> list[PaperSummary]:
    """Run the agent on every document, at most ``options.workers`` at a time."""
    ids = [d.paper_id for d in documents]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InputError(f"several papers map to the same paper id: {', '.join(duplicates)}")
    gate = asyncio.Semaphore(options.workers)
    chat = ChatClient(settings)
    report = progress or (lambda _paper, _what: None)
    try:
        await chat.check_reachable()
        window = await chat.context_window()
        if window is None:
            report("", "warning: the model server does not say its context window; give "
                       "--context-window N so that the paper is shown in pieces that fit")
        async with tool_servers(plan, urls=options.tool_servers) as servers:
            for name, why in servers.unavailable.items():
                tools = dict.fromkeys(t for step in plan.steps for e in step.external
                                      if e.server == name for t in e.tools)
                report("", f"warning: tool server {name} is not available ({why}); the plan "
                           f"steps run without {', '.join(tools)}")

            async def one(document: Document) -> PaperSummary:
                async with gate:
                    return await _extract_one(document, ir=ir, surface=surface, plan=plan,
                                              store=store, chat=chat, options=options,
                                              progress=report, window=window, servers=servers)

            return list(await asyncio.gather(*(one(d) for d in documents)))
    finally:
        await chat.close()


async def _extract_one(
    document: Document, *, ir: OntologyIR, surface: ToolSurface, plan: Plan,
    store: GraphStore, chat: ChatClient, options: BatchOptions, progress: Progress,
    window: int | None, servers: ToolServers,
) -> PaperSummary:
    pid = document.paper_id
    path = trace_path(options.out_dir, pid)
    previous = AgentTrace.load(path) if path.is_file() else None
    if previous is not None and previous.status == "complete" and not options.replace:
        progress(pid, "skipped (already complete)")
        return summarise(previous, outcome="skipped", seconds=0.0)
    if store.has_paper(pid):
        if previous is None and not options.replace:
            raise InputError(f"paper {pid} already has a graph in the store that no run of "
                             f"this output folder made; use --replace to redo it")
        store.drop(pid)  # an interrupted or replaced run: start the paper again
    started = time.monotonic()
    progress(pid, "started")
    try:
        async with paper_tools(ir, store, pid, document=document, feedback=options.feedback,
                               surface=surface, lam=options.lam) as client:
            trace = await run_paper(
                document, plan, tools=client, chat=chat, trace_path=path,
                max_iterations=options.max_iterations, feedback=options.feedback,
                on_step=lambda step: _report_step(pid, step, progress), context_window=window,
                servers=servers,
            )
    except Exception as exc:  # a kgctl error, possibly inside the session's exception group
        error = exc if isinstance(exc, KgctlError) else (
            first_kgctl_error(exc) if isinstance(exc, BaseExceptionGroup) else None)
        if error is None:
            raise
        progress(pid, "failed")
        failed = AgentTrace.load(path) if path.is_file() else None
        summary = summarise(failed, outcome="failed", seconds=time.monotonic() - started) \
            if failed else PaperSummary(paper_id=pid, outcome="failed")
        return summary.model_copy(update={"error": str(error)})
    if store.has_paper(pid):  # the evidence view places the quotes in this text
        store_paper_text(store, pid, document.text)
    store.flush()
    limited = any(s.status == "iteration_limit" for s in trace.steps)
    progress(pid, "done")
    outcome: Outcome = "iteration_limit" if limited else "complete"
    if not trace.accepted_calls():
        outcome = "nothing_extracted"
        progress(pid, "warning: nothing extracted; the paper's graph is empty (does the model "
                      "call tools? see docs/agent.md)")
    return summarise(trace, outcome=outcome, seconds=time.monotonic() - started)


def _report_step(pid: str, step: StepTrace, progress: Progress) -> None:
    progress(pid, f"step {step.step} {step.status}")
    if step.status == "too_large":  # its error names the step, the window and the sizes
        progress(pid, f"warning: {step.error}")
    elif step.status in WARN_STATUSES:
        refused = sum(step.refused.values())
        why = step.error or (f"all {refused} graph-tool calls were refused" if refused
                             else "the model called no graph tool")
        if "cut_off" in step.endings:
            why += "; its replies were cut off at the reply budget (--max-tokens)"
        progress(pid, f"warning: step {step.step} {WARN_STATUSES[step.status]}: {why}")


# Pure functions


def summarise(trace: AgentTrace, *, outcome: Outcome, seconds: float) -> PaperSummary:
    calls = [c for s in trace.steps for c in s.calls if not c.local]
    usage = trace.usage
    return PaperSummary(
        paper_id=trace.paper_id, outcome=outcome, steps=len(trace.steps),
        accepted=sum(not c.is_error for c in calls), rejected=sum(c.is_error for c in calls),
        prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
        cost_usd=usage.cost_usd, seconds=round(seconds, 2), error=trace.error,
        steps_without_writes=[f"{s.step}: {s.status}" for s in trace.steps
                              if not any(not c.is_error and not c.local for c in s.calls)],
    )
