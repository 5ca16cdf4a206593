"""The full record of one agent run on one paper: every message, tool call and result.

A trace is written after every plan step, so an interrupted run leaves what it had done;
its accepted write calls are the replayable part (see `kgctl.agent.replay`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kgctl.agent.usage import Usage
from kgctl.errors import InputError
from kgctl.papers.formats import TRACE_FORMAT

# done: wrote something; empty: ended without an accepted write; too_large: the step's tools and
# prompt do not fit the context window (nothing sent); failed: a model error ended it.
StepStatus = Literal["done", "empty", "iteration_limit", "too_large", "failed"]
# How one conversation of a step ended: the model answered without tool calls, the turn bound,
# the context window was full, replies kept being cut off at the reply budget.
Ending = Literal["answered", "iteration_limit", "context_full", "cut_off"]
RunStatus = Literal["running", "complete", "failed"]


class ToolCallRecord(BaseModel):
    """One tool call the model asked for, and what came back."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    step: str
    iteration: int
    call_id: str
    tool: str
    raw_arguments: str  # exactly as the model wrote them
    arguments: dict[str, Any] | None  # None when they did not parse as a JSON object
    is_error: bool
    result: str  # text content returned to the model
    structured: dict[str, Any] | None = None
    # not a graph tool: answered by the agent (search, review) or by an external server
    local: bool = False
    server: str | None = None  # the external tool server that answered


class StepTrace(BaseModel):
    """One plan step: its conversations (one per piece of the paper, then the verification
    pass; ``messages`` holds them one after the other, each from its system message), calls,
    usage and outcome. Fields after ``status`` are absent from older traces."""

    model_config = ConfigDict(extra="forbid")
    step: str
    tools: list[str]
    messages: list[dict[str, Any]] = []
    calls: list[ToolCallRecord] = []
    usage: Usage = Usage()
    status: StepStatus = "done"
    error: str | None = None  # why a step failed or does not fit
    finish_reasons: list[str | None] = []  # one per model turn, as the server said
    endings: list[Ending] = []  # one per conversation
    pieces: int = 0  # pieces of the paper shown
    fixed_tokens: int | None = None  # estimated tokens of system message + tools per turn
    context_window: int | None = None
    accepted: int = 0  # graph-tool calls written
    refused: dict[str, int] = {}  # graph-tool calls refused, by feedback code
    seconds: float = 0.0

    def accepted_now(self) -> int:
        return sum(not c.is_error and not c.local for c in self.calls)

    def tally(self) -> None:
        """Count accepted and refused graph-tool calls from ``calls``."""
        graph = [c for c in self.calls if not c.local]
        self.accepted = sum(not c.is_error for c in graph)
        refused: dict[str, int] = {}
        for call in graph:
            if call.is_error:
                refused[feedback_code(call.result)] = refused.get(feedback_code(call.result), 0) + 1
        self.refused = refused


class AgentTrace(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = TRACE_FORMAT
    paper_id: str
    model: str
    base_url: str
    feedback: bool = True
    status: RunStatus = "running"
    error: str | None = None
    unavailable: dict[str, str] = {}  # external tool servers left out of the run -> why
    steps: list[StepTrace] = []

    @property
    def usage(self) -> Usage:
        total = Usage()
        for step in self.steps:
            total = total + step.usage
        return total

    def accepted_calls(self) -> list[ToolCallRecord]:
        """Graph-tool calls that the tools accepted, in order: the replayable part."""
        return [c for s in self.steps for c in s.calls if not c.is_error and not c.local]

    def save(self, path: Path) -> None:
        """Write atomically (a crash never leaves half a trace)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.model_dump(mode="json") | {"usage": self.usage.model_dump(mode="json")}
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> AgentTrace:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("usage", None)
            return cls.model_validate(data)
        except (OSError, ValueError, ValidationError) as exc:
            raise InputError(f"{path}: not an agent trace ({_first_line(exc)})") from None


def feedback_code(result: str) -> str:
    """The ``code`` of a feedback envelope (``error`` when the text is not one).

    >>> feedback_code('{"status": "rejected", "code": "required_missing"}'), feedback_code("x")
    ('required_missing', 'error')
    """
    try:
        data = json.loads(result)
    except ValueError:
        return "error"
    code = data.get("code") if isinstance(data, dict) else None
    return code if isinstance(code, str) else "error"


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
