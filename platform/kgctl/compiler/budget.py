"""Token budget of the compiled surface: what a model must read, per tool and per plan step.

The measure (tokenizer `kgctl.tokens.TOKENIZER`, o200k_base):

- a tool costs the tokens of the JSON object an MCP server lists for it,
  ``{"name", "description", "inputSchema"}`` (`json.dumps`, default separators, non-ASCII kept);
- a plan step's fixed cost per turn is the cost of the tools it offers plus the tokens of its
  system message (the plan's system prompt, a blank line, the step prompt), i.e. what the
  agent sends on every model turn of that step before any paper text, plus CLIENT_RESERVE for
  the client's own tools (evidence search) and the tokens the profile states for the step's
  external tools (tools of another MCP server, e.g. chemistry; their instructions are part of
  the system message);
- the verification pass of a step offers the step's tools plus the repair tools, and its
  request adds the step's verification rules.

Counts are deterministic, so the budget is a plain test, not a timing.

>>> from kgctl.compiler import compile_tools
>>> from kgctl.compiler.plan import compile_plan
>>> from kgctl.ontology import default_ir
>>> surface = compile_tools(default_ir())
>>> report = plan_budget(compile_plan(default_ir(), surface=surface), surface)
>>> report.tokenizer, report.over_budget()
('o200k_base', [])
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from kgctl.compiler.prompts import SYSTEM_PROMPT
from kgctl.compiler.spec import ToolSpec, ToolSurface
from kgctl.ontology.ir import OntologyIR
from kgctl.tokens import TOKENIZER, count_tokens

if TYPE_CHECKING:
    from kgctl.compiler.plan import Plan

SURFACE_BUDGET = 20_000  # all compiled tools together
STEP_BUDGET = 6_000  # one plan step per turn: its tools + system message + CLIENT_RESERVE
# the agent's own tools offered beside every step (evidence search); a test checks they fit
CLIENT_RESERVE = 150


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepCost(_Frozen):
    step: str
    tools: int  # number of compiled tools offered
    tool_tokens: int
    system_tokens: int
    external_tokens: int  # the step's external tools (the profile's figure)
    per_turn: int  # tool_tokens + system_tokens + external_tokens + CLIENT_RESERVE
    verify_per_turn: int  # verification pass: + repair tools + the rules request


class BudgetReport(_Frozen):
    tokenizer: str = TOKENIZER
    surface_tools: int
    surface_tokens: int
    steps: tuple[StepCost, ...]
    surface_budget: int = SURFACE_BUDGET
    step_budget: int = STEP_BUDGET
    client_reserve: int = CLIENT_RESERVE

    def over_budget(self) -> list[str]:
        """One line per figure above its budget (empty: within budget)."""
        out = [f"surface: {self.surface_tokens} > {self.surface_budget}"
               ] if self.surface_tokens > self.surface_budget else []
        for s in self.steps:
            for what, value in (("per turn", s.per_turn), ("verify", s.verify_per_turn)):
                if value > self.step_budget:
                    out.append(f"{s.step} {what}: {value} > {self.step_budget}")
        return out

    def table(self) -> str:
        """The figures as a plain-text table."""
        lines = [f"tokens ({self.tokenizer}); budget {self.surface_budget} for the surface, "
                 f"{self.step_budget} per step and turn (incl. {self.client_reserve} for the "
                 "client's own tools)",
                 f"surface: {self.surface_tools} tools, {self.surface_tokens} tokens", "",
                 f"{'step':<24}{'tools':>6}{'tool specs':>12}{'system':>8}{'external':>10}"
                 f"{'per turn':>10}{'verify':>8}"]
        lines += [f"{s.step:<24}{s.tools:>6}{s.tool_tokens:>12}{s.system_tokens:>8}"
                  f"{s.external_tokens:>10}{s.per_turn:>10}{s.verify_per_turn:>8}"
                  for s in self.steps]
        return "\n".join(lines)


# a step prompt needs at least this much beside the system prompt and the tools
MIN_STEP_PROMPT = 200
# every argument costs at least this much in a listing (name, type, braces)
MIN_ARG_TOKENS = 4


# per-class tools with more arguments than this cannot fit the surface budget
MAX_ARGUMENTS = SURFACE_BUDGET // MIN_ARG_TOKENS


def surface_fits(ir: OntologyIR, tools: Iterable[ToolSpec], *, shared: Iterable[str]) -> bool:
    """Whether per-class tools (with their schemas) fit the budget: the surface, and per tool
    set the tools its plan step offers with those of the `shared` tool sets (offered beside
    every step or in its verification pass), the system prompt, MIN_STEP_PROMPT and
    CLIENT_RESERVE."""
    tools = list(tools)
    cost = {t.name: tool_tokens(t) for t in tools}
    if sum(cost.values()) > SURFACE_BUDGET:
        return False
    shared = set(shared)
    fixed = (sum(cost[t.name] for t in tools if t.toolset in shared) + CLIENT_RESERVE
             + count_tokens(SYSTEM_PROMPT) + MIN_STEP_PROMPT)
    sets = dict.fromkeys(t.toolset for t in tools if t.toolset not in shared)
    return all(fixed + _sum(cost, (t.name for t in offered(ir, [
        t for t in tools if t.toolset == toolset]))) <= STEP_BUDGET for toolset in sets)


def offered(ir: OntologyIR, tools: list[ToolSpec]) -> list[ToolSpec]:
    """The tools of a tool set its plan step offers: an `add_` tool is left out when every
    class it attaches to is created in this step by a `create_` tool that takes the same
    property inline (as an object)."""
    inline: dict[str, set[str]] = {}
    for tool in tools:
        for arg in tool.args if tool.action == "create" and tool.target else ():
            if arg.kind == "node" and arg.fields and arg.node_mode == "occurrence":
                inline.setdefault(arg.property or "", set()).add(tool.target or "")

    def redundant(tool: ToolSpec) -> bool:
        subjects = {c for d in tool.args[0].classes for c in ir.subclasses(d)
                    if c in ir.classes and not ir.classes[c].abstract}
        return bool(subjects) and subjects <= inline.get(tool.via or "", set())

    return [t for t in tools if not (t.action == "add" and redundant(t))]


def tool_tokens(tool: ToolSpec) -> int:
    """Tokens of one tool as an MCP server lists it."""
    return count_tokens(json.dumps({"name": tool.name, "description": tool.description,
                                    "inputSchema": tool.input_schema}, ensure_ascii=False))


def system_message(plan: Plan, step_id: str) -> str:
    """The system message of one plan step, as the agent sends it (external servers up)."""
    return plan.system_message(plan.step(step_id))


def plan_budget(plan: Plan, surface: ToolSurface, *, step_budget: int = STEP_BUDGET
                ) -> BudgetReport:
    """Token figures of a tool surface and of each step of its plan."""
    cost = {t.name: tool_tokens(t) for t in surface.tools}
    steps = []
    for step in plan.steps:
        tools = _sum(cost, step.tools)
        system = count_tokens(system_message(plan, step.id))
        repair = _sum(cost, (n for n in plan.repair_tools if n not in step.tools))
        rules = count_tokens(step.verify)
        external = sum(e.tokens for e in step.external)
        per_turn = tools + system + external + CLIENT_RESERVE
        steps.append(StepCost(step=step.id, tools=len(step.tools), tool_tokens=tools,
                              system_tokens=system, external_tokens=external, per_turn=per_turn,
                              verify_per_turn=per_turn + repair + rules))
    return BudgetReport(surface_tools=len(surface.tools), surface_tokens=sum(cost.values()),
                        steps=tuple(steps), step_budget=step_budget)


def _sum(cost: dict[str, int], names: Iterable[str]) -> int:
    return sum(cost.get(n, 0) for n in names)
