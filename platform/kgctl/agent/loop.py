"""The extraction agent: for each plan step, a bounded tool-calling conversation.

Only the step's tool set (plus evidence search) is offered; every call goes through the MCP
session, so the graph changes only through the validating tools. A rejected call comes back
as the tool's feedback (``is_error``) in the next request, which is how the model repairs it.
Arguments that are not a JSON object never reach the tools: the model gets the same kind of
feedback envelope. After a step with verification rules, the agent is shown what it wrote
(read from the store's provenance through the ``review_writes`` tool) and may correct it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent, Tool

from kgctl.agent.ingest import Document
from kgctl.agent.llm import ChatClient, LLMError
from kgctl.agent.tools import AGENT_TOOLS, REVIEW_TOOL, SEARCH_TOOL
from kgctl.agent.trace import AgentTrace, StepTrace, ToolCallRecord
from kgctl.compiler.plan import Plan, PlanStep

DEFAULT_MAX_ITERATIONS = 24  # model turns per plan step
VERIFY_ITERATIONS = 8  # model turns of a verification pass
# Sections shown in full with a step; longer papers are cut and the rest reached by search.
MAX_CONTEXT_CHARS = 60_000

StepCallback = Callable[[StepTrace], None]


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
) -> AgentTrace:
    """Follow the plan on one paper; the trace is saved after every step and at the end."""
    trace = AgentTrace(
        paper_id=document.paper_id,
        model=chat.settings.model,
        base_url=chat.settings.base_url,
        feedback=feedback,
    )
    listing = {tool.name: tool for tool in (await tools.list_tools()).tools}
    try:
        for step in plan.steps:
            step_trace = await _run_step(
                document, plan, step, tools=tools, chat=chat, listing=listing,
                max_iterations=max_iterations,
            )
            trace.steps.append(step_trace)
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


async def _run_step(
    document: Document,
    plan: Plan,
    step: PlanStep,
    *,
    tools: Client,
    chat: ChatClient,
    listing: dict[str, Tool],
    max_iterations: int,
) -> StepTrace:
    offered = [name for name in (*step.tools, SEARCH_TOOL) if name in listing]
    trace = StepTrace(step=step.id, tools=offered)
    trace.messages = [
        {"role": "system", "content": f"{plan.system_prompt}\n\n{step.prompt}"},
        {"role": "user", "content": step_request(document, step)},
    ]
    done = await _converse(trace, tools, chat, listing, offered, max_iterations)
    if done and step.verify and REVIEW_TOOL in listing:
        review = await _call_tool(tools, REVIEW_TOOL, json.dumps({"tools": list(step.tools)}),
                                  allowed={REVIEW_TOOL})
        trace.calls.append(_record(step.id, 0, "review", REVIEW_TOOL, review, local=True))
        trace.messages.append({"role": "user", "content": verification_request(step, review[2])})
        repair = [n for n in (*offered, *plan.repair_tools) if n in listing and n not in offered]
        done = await _converse(trace, tools, chat, listing, [*offered, *repair], VERIFY_ITERATIONS)
    trace.status = "done" if done else "iteration_limit"
    return trace


async def _converse(
    trace: StepTrace,
    tools: Client,
    chat: ChatClient,
    listing: dict[str, Tool],
    offered: Sequence[str],
    max_iterations: int,
) -> bool:
    """Ask, run the requested calls, repeat until the model stops calling tools (True) or the
    iteration bound is reached (False)."""
    specs = [function_spec(listing[name]) for name in offered]
    for _ in range(max_iterations):
        iteration = sum(m["role"] == "assistant" for m in trace.messages) + 1
        result = await chat.complete(trace.messages, tools=specs)
        trace.usage = trace.usage + result.usage
        trace.messages.append(result.message)
        calls = result.message.get("tool_calls") or []
        if not calls:
            return True
        for call in calls:
            name, raw = call["function"]["name"], call["function"].get("arguments") or ""
            outcome = await _call_tool(tools, name, raw, allowed=set(offered))
            trace.calls.append(
                _record(trace.step, iteration, call["id"], name, outcome,
                        local=name in AGENT_TOOLS)
            )
            trace.messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": outcome[2]}
            )
    return False


Outcome = tuple[dict[str, Any] | None, bool, str, dict[str, Any] | None, str]


async def _call_tool(tools: Client, name: str, raw: str, *, allowed: set[str]) -> Outcome:
    """(parsed arguments, is_error, text for the model, structured content, raw arguments)."""
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


def _record(step: str, iteration: int, call_id: str, name: str, outcome: Outcome, *,
            local: bool) -> ToolCallRecord:
    arguments, is_error, text, structured, raw = outcome
    return ToolCallRecord(
        step=step, iteration=iteration, call_id=call_id, tool=name, raw_arguments=raw,
        arguments=arguments, is_error=is_error, result=text, structured=structured, local=local,
    )


# Pure functions


def function_spec(tool: Tool) -> dict[str, Any]:
    """An MCP tool as an OpenAI function specification.

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


def step_request(document: Document, step: PlanStep) -> str:
    """The user turn of a plan step: what to do, then the sections it should read."""
    wanted = [s for s in document.sections
              if any(word.lower() in s.title.lower() for word in step.read)]
    shown = wanted or list(document.sections)
    parts, size = [], 0
    for section in shown:
        body = document.section_text(section)
        block = f"[section: {section.title} | offsets {section.start}-{section.end}]\n{body}"
        if size + len(block) > MAX_CONTEXT_CHARS:
            parts.append(f"[further sections omitted; use {SEARCH_TOOL} to find them]")
            break
        parts.append(block)
        size += len(block)
    return (
        f"Paper {document.paper_id}. Plan step: {step.title}.\nGoal: {step.goal}\n"
        f"Call the tools to record what the paper states; pass an evidence quote with its section "
        f"and character offsets when you can; use {SEARCH_TOOL} to find passages. "
        "Reply without tool calls when this step is complete.\n\n" + "\n\n".join(parts)
    )


def verification_request(step: PlanStep, review: str) -> str:
    return (
        "Verification pass. These are the calls you made in this step, with their evidence:\n"
        f"{review}\n\nCheck each against the paper. Rules:\n{step.verify}\n"
        "Correct any mistake with the repair tools; reply without tool calls when all is right."
    )
