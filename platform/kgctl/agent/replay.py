"""Replay: re-issue a recorded tool-call trace through the paper's compiled tools.

Unlike the store's delta replay, every call goes through the same validation path again, so a
replay also checks that the recorded calls are still valid against the current tools. Two
trace formats are read: the store's JSONL trace (one CallRecord per line, e.g. from
`kgctl store export` or the round-trip oracle) and an agent run trace (its accepted calls).

>>> calls_from_text('{"paper_id": "p", "seq": 1, "tool": "t", "arguments": {"a": 1}, '
...                 '"time": "2024-01-01T00:00:00Z", "evidence": {"quote": "q"}}\\n', "x.jsonl")
('p', [ReplayCall(tool='t', arguments={'a': 1, 'evidence': {'quote': 'q'}})])
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict
from pyoxigraph import Quad

from kgctl.agent.trace import AgentTrace
from kgctl.compiler import ToolSurface, compile_tools
from kgctl.errors import InputError
from kgctl.instantiation.engine import Instantiator
from kgctl.instantiation.server import build_server, call_in_process
from kgctl.ontology.ir import OntologyIR
from kgctl.papers.formats import TRACE_FORMAT
from kgctl.store import EmbeddedStore
from kgctl.store.base import FLUSH_QUADS, GraphStore
from kgctl.store.iris import paper_id as make_paper_id
from kgctl.store.trace import read_trace

# Tools whose calls never change the graph; their records, if any, are not re-issued.
SELECT_TOOL = "select_paper"
SESSION_TOOLS = frozenset({SELECT_TOOL})


class ReplayCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    tool: str
    arguments: dict[str, Any]


class Refusal(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    position: int  # 1-based position in the trace
    tool: str
    feedback: str


class ReplayReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    paper_id: str
    calls: int
    accepted: int
    refused: tuple[Refusal, ...] = ()


def load_calls(path: Path) -> tuple[str, list[ReplayCall]]:
    """(paper id, calls) of a trace file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror}") from None
    return calls_from_text(text, path.name)


async def replay_traces(
    paths: Sequence[Path],
    *,
    ir: OntologyIR,
    store: GraphStore,
    surface: ToolSurface | None = None,
    replace: bool = False,
    feedback: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[ReplayReport]:
    """Replay trace files into the store through the tools of the instantiation server.

    Each trace is read when its turn comes and replayed into a paper store in memory, call by
    call, each call checked as an MCP session's call is (`call_in_process`: the server's checks,
    then the same handler, without the JSON-RPC round trip). About every FLUSH_QUADS quads, the
    papers built go into `store` in one transaction: memory stays bounded and each paper is in
    `store` whole or not at all."""
    papers = [trace_paper(path) for path in paths]
    clash = sorted(pid for pid, n in Counter(papers).items() if n > 1)
    if clash:
        raise InputError(f"several traces are for the same paper: {', '.join(clash)}")
    taken = [p for p in papers if store.has_paper(p)]
    if taken and not replace:
        raise InputError(f"{len(taken)} paper(s) already have a graph in the store "
                         f"({', '.join(taken[:3])}{' ...' if len(taken) > 3 else ''}); "
                         "use --replace to rebuild them from the traces")
    for pid in taken:
        store.drop(pid)
    surface = surface or compile_tools(ir)
    server = build_server(ir, store, feedback=feedback, surface=surface)
    await server.ready()
    tools = Instantiator(ir, store, surface=surface, feedback=feedback)  # each paper's: .over
    reports: list[ReplayReport] = []
    built: list[Quad] = []  # papers replayed whole, not yet in `store`
    try:
        for path in paths:
            pid, calls = load_calls(path)
            scratch = EmbeddedStore()
            engine = tools.over(scratch)
            reports.append(replay_calls(partial(call_in_process, server, engine), pid,
                                        _selected(pid), calls))
            built.extend(scratch.quads())
            if progress:
                progress(pid)
            if len(built) >= FLUSH_QUADS:
                _add(built, store)
    finally:  # the papers replayed whole are kept, even when a later trace fails
        _add(built, store)
    return reports


def replay_calls(call: Callable[[str, str, dict[str, Any]], CallToolResult], paper_id: str,
                 paper: str, calls: list[ReplayCall]) -> ReplayReport:
    """Issue the calls in order on `paper`; refusals are reported (the graph keeps the
    accepted ones)."""
    refused = []
    for position, item in enumerate(calls, start=1):
        result = call(item.tool, paper, item.arguments)
        if result.is_error:
            text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
            refused.append(Refusal(position=position, tool=item.tool, feedback=text))
    return ReplayReport(paper_id=paper_id, calls=len(calls), accepted=len(calls) - len(refused),
                        refused=tuple(refused))


def _selected(pid: str) -> str:
    """The paper a session selecting `pid` is bound to (as `select_paper` binds it)."""
    try:
        return make_paper_id(pid)
    except ValueError:
        raise InputError(f"cannot select paper {pid!r} for replay") from None


def _add(built: list[Quad], store: GraphStore) -> None:
    """Put the papers built so far into `store` in one transaction (none of them has a graph
    there before), then flush it so that its memory stays bounded."""
    store.import_quads(built)
    store.flush()
    built.clear()


def trace_paper(path: Path) -> str:
    """The paper a trace is for, from its first record when it is a store trace (the rest is
    checked when it is replayed); an agent trace is one JSON object, read whole."""
    try:
        with path.open(encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), "")
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path.name}: not UTF-8 text ({exc.reason})") from None
    try:
        record = json.loads(first)
    except ValueError:
        record = None
    if isinstance(record, dict) and isinstance(record.get("paper_id"), str) \
            and "format" not in record:
        return record["paper_id"]
    return load_calls(path)[0]


# Pure functions


def calls_from_text(text: str, source: str) -> tuple[str, list[ReplayCall]]:
    """Parse an agent trace (JSON object) or a store trace (JSONL of call records)."""
    if not text.strip():
        raise InputError(f"{source}: the trace is empty")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and whole.get("format") == TRACE_FORMAT:
        return _agent_calls(whole, source)
    records = read_trace(text, source=source)
    papers = sorted({r.paper_id for r in records})
    if len(papers) != 1:
        raise InputError(f"{source}: a trace must hold one paper's calls, found {papers}")
    calls = [
        ReplayCall(tool=r.tool, arguments=_with_evidence(r.arguments, r.evidence))
        for r in sorted(records, key=lambda r: r.seq) if r.tool not in SESSION_TOOLS
    ]
    return papers[0], calls


def _agent_calls(data: dict[str, Any], source: str) -> tuple[str, list[ReplayCall]]:
    try:
        trace = AgentTrace.model_validate({k: v for k, v in data.items() if k != "usage"})
    except ValueError as exc:
        raise InputError(f"{source}: not an agent trace ({str(exc).splitlines()[0]})") from None
    calls = [ReplayCall(tool=c.tool, arguments=c.arguments or {})
             for c in trace.accepted_calls() if c.tool not in SESSION_TOOLS]
    return trace.paper_id, calls


def _with_evidence(arguments: dict[str, Any], evidence: Any) -> dict[str, Any]:
    if evidence is None or "evidence" in arguments:
        return dict(arguments)
    return {**arguments, "evidence": evidence.model_dump(exclude_none=True)}
