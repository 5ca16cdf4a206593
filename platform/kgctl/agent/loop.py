"""The extraction agent: for each plan step, bounded tool-calling conversations.

Only the step's tool set (plus evidence search) is offered; every call goes through the MCP
session, so the graph changes only through the validating tools. A rejected call comes back
as the tool's feedback (``is_error``) in the next request, which is how the model repairs it.
Arguments that are not a JSON object never reach the tools: the model gets the same kind of
feedback envelope. Tool calls the model wrote as text in its reply count as calls.

The paper is shown in pieces that fit the model's context window beside the step's tools and
system message (one conversation per piece); a step whose tools and prompt alone do not fit is
not sent at all (``too_large``). A context overflow the server reports is retried smaller: the
first turn with a smaller piece, later turns with older tool results elided; it ends the step
at worst, never the paper. A reply cut off at the reply budget is not an answer: its calls are
not run and the model is told. After a step that wrote something and has verification rules,
the agent is shown what it wrote (read from the store's provenance through the
``review_writes`` tool) and may correct it. A step's external tools (another MCP server's, e.g.
chemistry; `kgctl.agent.external`) are offered beside its own when their server is up, and
their calls are routed to that server's session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgctl.agent.budget import estimate, paper_pieces, piece_budget, shrunk_budget
from kgctl.agent.external import ToolServers
from kgctl.agent.llm import ChatClient, ChatResult, ContextOverflow, LLMError, StepError
from kgctl.agent.messages import (
    cut_off_note,
    elide,
    piece_request,
    step_header,
    step_sections,
    verification_request,
)
from kgctl.agent.toolcalls import calls_in_text
from kgctl.agent.tools import AGENT_TOOLS, REVIEW_TOOL, SEARCH_TOOL
from kgctl.agent.trace import AgentTrace, Ending, StepTrace, ToolCallRecord
from kgctl.compiler.plan import Plan, PlanStep
from kgctl.papers.ingest import Document, Section

if TYPE_CHECKING:  # the MCP SDK loads when a paper is extracted, not for a usage error
    from mcp import Client
    from mcp_types import Tool

DEFAULT_MAX_ITERATIONS = 24  # model turns per conversation of a plan step
VERIFY_ITERATIONS = 8  # model turns of a verification pass
MAX_CUT_REPLIES = 2  # replies in a row cut off at the reply budget end a conversation

StepCallback = Callable[[StepTrace], None]


@dataclass(frozen=True)
class _Run:
    """What every conversation of a paper shares."""

    tools: Client
    chat: ChatClient
    listing: dict[str, Tool]
    window: int | None
    servers: ToolServers

    def spec(self, name: str) -> dict[str, Any]:
        return function_spec(self.listing.get(name) or self.servers.listing[name])

    def server(self, name: str) -> str | None:
        """The external server of a tool (None: the paper's own tools, which win a clash)."""
        return None if name in self.listing else self.servers.server_of.get(name)

    def session(self, name: str) -> Client:
        server = self.server(name)
        return self.servers.sessions[server] if server else self.tools

    @property
    def reply(self) -> int:
        return self.chat.settings.max_tokens


async def run_paper(
    document: Document,
    plan: Plan,
    *,
    tools: Client,
    chat: ChatClient,
    trace_path: Path | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    feedback: bool = True,
    on_step: StepCallback | None = None,
    context_window: int | None = None,
    servers: ToolServers | None = None,
) -> AgentTrace:
    """Follow the plan on one paper; the trace is saved after every step and at the end. A step
    that fails stays in the trace with what it did and used. `servers`: the external tool
    servers of the run (none: the steps run without external tools)."""
    servers = servers or ToolServers()
    trace = AgentTrace(
        paper_id=document.paper_id,
        model=chat.settings.model,
        base_url=chat.settings.base_url,
        feedback=feedback,
        unavailable=dict(servers.unavailable),
    )
    run = _Run(tools=tools, chat=chat, window=context_window, servers=servers,
               listing={tool.name: tool for tool in (await tools.list_tools()).tools})
    try:
        for step in plan.steps:
            step_trace = StepTrace(step=step.id, tools=[], context_window=context_window)
            trace.steps.append(step_trace)
            started = time.monotonic()
            try:
                await _run_step(step_trace, document, plan, step, run, max_iterations)
            except LLMError as exc:  # the paper cannot go on (server gone, key refused)
                step_trace.status, step_trace.error = "failed", str(exc)
                raise
            finally:
                step_trace.tally()
                step_trace.seconds = round(time.monotonic() - started, 3)
            if trace_path:
                trace.save(trace_path)
            if on_step:
                on_step(step_trace)
        trace.status = "complete"
    except LLMError as exc:
        trace.status, trace.error = "failed", str(exc)
        raise
    finally:
        if trace_path:
            trace.save(trace_path)
    return trace


async def _run_step(trace: StepTrace, document: Document, plan: Plan, step: PlanStep,
                    run: _Run, max_iterations: int) -> None:
    offered = [name for name in (*step.tools, SEARCH_TOOL) if name in run.listing]
    offered += run.servers.offered(step)
    trace.tools = offered
    specs = [run.spec(name) for name in offered]
    system = {"role": "system",
              "content": plan.system_message(step, servers=set(run.servers.sessions))}
    header = step_header(document, step)
    fixed = await _size(run, [system, {"role": "user", "content": header}], specs)
    trace.fixed_tokens = fixed
    budget = piece_budget(run.window, fixed=fixed, reply=run.reply)
    if not budget:
        trace.status = "too_large"
        trace.error = (f"step {step.id} does not fit the {run.window}-token context window: its "
                       f"tools and system message take about {fixed} tokens and the reply "
                       f"{run.reply}, leaving too little for the paper; use a model with a "
                       f"larger context or a smaller --max-tokens")
        return
    sections = step_sections(document, step)
    try:
        conversation = await _read_pieces(trace, sections, document, system, header, specs,
                                          run, budget, max_iterations)
        if (conversation and trace.accepted_now() and step.verify
                and REVIEW_TOOL in run.listing and trace.endings[-1] == "answered"):
            await _verify(trace, conversation, plan, step, offered, run)
    except StepError as exc:
        trace.status, trace.error = "failed", str(exc)
        return
    if "iteration_limit" in trace.endings:
        trace.status = "iteration_limit"
    else:
        trace.status = "done" if trace.accepted_now() else "empty"


async def _read_pieces(trace: StepTrace, sections: Sequence[Section], document: Document,
                       system: dict[str, Any], header: str, specs: list[dict[str, Any]],
                       run: _Run, budget: int, max_iterations: int) -> list[dict[str, Any]]:
    """One conversation per piece of the paper; a piece the server finds too large is split
    smaller and retried. Returns the last conversation."""
    pending = paper_pieces(document, sections, budget=budget)
    conversation: list[dict[str, Any]] = []
    while pending:
        piece = pending[0]
        request = piece_request(header, piece, trace.pieces + 1, trace.pieces + len(pending))
        conversation = [system, {"role": "user", "content": request}]
        trace.messages.extend(conversation)
        try:
            ending = await _converse(trace, conversation, specs, run, max_iterations)
        except ContextOverflow as exc:  # on the first turn: nothing was done with this piece
            sent = await _size(run, conversation, specs)
            budget = shrunk_budget(budget, sent=sent, fixed=trace.fixed_tokens or 0,
                                   reply=run.reply, prompt_tokens=exc.prompt_tokens,
                                   context=exc.context)
            if not budget:
                raise StepError(f"{exc}; even the smallest piece of the paper does not fit "
                                "beside the step's tools") from None
            pending = paper_pieces(document, sections, budget=budget, start_at=piece.start)
            continue
        trace.pieces += 1
        trace.endings.append(ending)
        pending = pending[1:]
    return conversation


async def _verify(trace: StepTrace, conversation: list[dict[str, Any]], plan: Plan,
                  step: PlanStep, offered: list[str], run: _Run) -> None:
    review = await _call_tool(run.tools, REVIEW_TOOL, json.dumps({"tools": list(step.tools)}),
                              allowed={REVIEW_TOOL})
    trace.calls.append(_record(step.id, 0, "review", REVIEW_TOOL, review, run))
    _say(trace, conversation, {"role": "user", "content": verification_request(step, review[2])})
    repair = [n for n in plan.repair_tools if n in run.listing and n not in offered]
    specs = [run.spec(name) for name in (*offered, *repair)]
    try:
        trace.endings.append(await _converse(trace, conversation, specs, run, VERIFY_ITERATIONS))
    except ContextOverflow:
        trace.endings.append("context_full")


async def _converse(trace: StepTrace, conversation: list[dict[str, Any]],
                    specs: list[dict[str, Any]], run: _Run, max_iterations: int) -> Ending:
    """Ask, run the requested calls, repeat until the model stops calling tools, the turn bound,
    a full context window or replies cut off again and again."""
    offered = {spec["function"]["name"] for spec in specs}
    cut = 0
    for _ in range(max_iterations):
        result = await _ask(trace, conversation, specs, run)
        if result is None:
            return "context_full"
        trace.usage = trace.usage + result.usage
        trace.finish_reasons.append(result.finish_reason)
        turn = len(trace.finish_reasons)
        message = result.message
        if result.finish_reason == "length":  # cut off: its calls may be incomplete, run none
            trace.messages.append(message)
            conversation.append({"role": "assistant", "content": message.get("content") or ""})
            cut += 1
            if cut >= MAX_CUT_REPLIES:
                return "cut_off"
            _say(trace, conversation, {"role": "user", "content": cut_off_note(run.reply)})
            continue
        cut = 0
        calls = message.get("tool_calls") or calls_in_text(message.get("content"), turn=turn)
        if calls and not message.get("tool_calls"):
            message = {**message, "tool_calls": calls}  # written as text: answered as calls
        _say(trace, conversation, message)
        if not calls:
            return "answered"
        for call in calls:
            name, raw = call["function"]["name"], call["function"].get("arguments") or ""
            outcome = await _call_tool(run.session(name), name, raw, allowed=offered)
            trace.calls.append(_record(trace.step, turn, call["id"], name, outcome, run))
            _say(trace, conversation,
                 {"role": "tool", "tool_call_id": call["id"], "content": outcome[2]})
    return "iteration_limit"


async def _ask(trace: StepTrace, conversation: list[dict[str, Any]],
               specs: list[dict[str, Any]], run: _Run) -> ChatResult | None:
    """One model turn that fits the window: older tool results are elided when the conversation
    has grown too large (None: still too large). A first turn that does not fit, by our count or
    the server's answer, raises `ContextOverflow` (the caller shows a smaller piece)."""
    first = not any(m["role"] == "assistant" for m in conversation)
    if run.window and (size := await _size(run, conversation, specs)) + run.reply > run.window:
        if first:
            raise ContextOverflow("the step's request does not fit the context window",
                                  prompt_tokens=size, context=run.window)
        if not elide(conversation) or (
                await _size(run, conversation, specs) + run.reply > run.window):
            return None
    try:
        return await run.chat.complete(conversation, tools=specs)
    except ContextOverflow:
        if first or not elide(conversation):
            if first:
                raise
            return None
    try:
        return await run.chat.complete(conversation, tools=specs)
    except ContextOverflow:
        return None


async def _size(run: _Run, messages: list[dict[str, Any]], specs: list[dict[str, Any]]) -> int:
    """Prompt tokens of a request: the server's count where it gives one, else our estimate."""
    counted = await run.chat.count_prompt(messages, tools=specs)
    return estimate(messages, specs) if counted is None else counted


def _say(trace: StepTrace, conversation: list[dict[str, Any]], message: dict[str, Any]) -> None:
    trace.messages.append(message)
    conversation.append(message)


Outcome = tuple[dict[str, Any] | None, bool, str, dict[str, Any] | None, str]


async def _call_tool(tools: Client, name: str, raw: str, *, allowed: set[str]) -> Outcome:
    """(parsed arguments, is_error, text for the model, structured content, raw arguments)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import TextContent

    arguments = parse_arguments(raw)
    if name not in allowed:
        envelope = feedback_envelope(
            "tool_not_offered", field=None, value=name, allowed=sorted(allowed),
            message=f"tool {name!r} is not available in this plan step",
            hint="use one of the tools offered for this step",
        )
        return arguments, True, envelope, None, raw
    if arguments is None:
        envelope = feedback_envelope(
            "malformed_arguments", field=None, value=raw[:200], allowed=None,
            message="the arguments are not a JSON object",
            hint="send the arguments as one JSON object that follows the tool's input schema",
        )
        return None, True, envelope, None, raw
    try:
        result = await tools.call_tool(name, arguments)
    except MCPError as exc:
        envelope = feedback_envelope(
            "tool_failed", field=None, value=name, allowed=None, message=str(exc),
            hint="check the tool name and arguments",
        )
        return arguments, True, envelope, None, raw
    text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
    structured = result.structured_content
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    return arguments, bool(result.is_error), text, structured, raw


def _record(step: str, iteration: int, call_id: str, name: str, outcome: Outcome, run: _Run
            ) -> ToolCallRecord:
    """The trace record of a call; the agent's own tools and external tools are `local` (they
    write nothing to the graph)."""
    arguments, is_error, text, structured, raw = outcome
    server = run.server(name)
    return ToolCallRecord(
        step=step, iteration=iteration, call_id=call_id, tool=name, raw_arguments=raw,
        arguments=arguments, is_error=is_error, result=text, structured=structured,
        local=name in AGENT_TOOLS or server is not None, server=server,
    )


# Pure functions


def function_spec(tool: Tool) -> dict[str, Any]:
    """An MCP tool as an OpenAI function specification.

    >>> from mcp_types import Tool
    >>> spec = function_spec(Tool(name="t", description="d", input_schema={"type": "object"}))
    >>> spec["function"]["name"], spec["function"]["parameters"]
    ('t', {'type': 'object'})
    """
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema or {"type": "object", "properties": {}},
        },
    }


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """The model's argument string as a JSON object, or None (empty means no arguments).

    >>> [parse_arguments(raw) for raw in ('{"a": 1}', '', '{"a": 1', '[1]')]
    [{'a': 1}, {}, None, None]
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def feedback_envelope(
    code: str, *, field: str | None, value: Any, allowed: list[str] | None, message: str,
    hint: str,
) -> str:
    """A feedback object in the same shape as the instantiation tools' own."""
    return json.dumps({
        "status": "rejected", "code": code, "field": field, "value": value, "message": message,
        "allowed": allowed, "hint": hint, "retryable": True,
    }, ensure_ascii=False)
