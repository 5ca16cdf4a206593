"""The extraction plan, compiled from the IR and its tool surface (pure, deterministic).

One plan step per tool set that creates entities, in the tool surface's order (top-level
entities -> their parts -> ordered members with their conditions -> the other T-Boxes'
entities). Each step names
its goal, what to read, the tools it may call (its own tool set, less the `add_` tools its
create tools take inline, plus linking and read tools; repair tools join in the verification
pass), its prompt and its verification rules: the rules of its tools the schemas cannot show
plus each class's `verify` text from the profile (e.g. what counts as a separate
step). A profile may bind tools of an external, read-only MCP server to the steps that create
some of its classes (`tool_servers:`, e.g. chemistry for building units): the step lists them
under `external` with how to use them, and the plan says how to reach each server. A step
prompt gets the tokens the step budget leaves after its tools, the system prompt, the client
reserve, its external tools and the verification pass (`kgctl.compiler.budget`). Optional plan
hints (YAML) add section-title words to read per step.

>>> from kgctl.ontology import default_ir
>>> plan = compile_plan(default_ir())
>>> plan.to_json() == compile_plan(default_ir()).to_json()
True
>>> plan.steps[0].tools[0].startswith("create_")
True
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgctl.compiler.budget import CLIENT_RESERVE, STEP_BUDGET, offered, tool_tokens
from kgctl.compiler.naming import local_name, snake
from kgctl.compiler.prompts import SYSTEM_PROMPT, step_prompt, verification_rules
from kgctl.compiler.spec import ArgSpec, ToolSpec, ToolSurface
from kgctl.compiler.tools import compile_tools
from kgctl.errors import InputError, OntologyError
from kgctl.ontology.ir import OntologyIR, ToolServerInfo
from kgctl.tokens import count_tokens

PLAN_FORMAT = "kgctl-plan/1"
# Tool sets that never make a plan step of their own: offered alongside every step.
SHARED_TOOLSETS = ("links", "read")
REPAIR_TOOLSET = "repair"
# Section titles worth reading for any entity (generic structure of experimental papers).
GENERIC_READ = ("experimental", "method", "procedure", "supplementary")
PROMPT_MARGIN = 8  # tokens: joining the system prompt and a step prompt may merge a few
MIN_READ_WORD = 4  # shorter label words ("of", "the") are not section hints
STEP_TITLES = {
    "core": "Top-level entities",
    "parts": "Parts of the top-level entities",
    "sequence": "Ordered members with their conditions",
}


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanHints(Frozen):
    """Optional extra section-title words to read per tool set, and for every step (a domain
    pack's; verification rules per class are the profile's `verify` texts)."""

    read: dict[str, list[str]] = {}
    every: list[str] = []


class ExternalTools(Frozen):
    """Tools of an external server a step offers beside its own (they write nothing)."""

    server: str  # a name in Plan.tool_servers
    tools: tuple[str, ...]
    tokens: int  # what their listing adds to a turn (the profile's figure)
    prompt: str  # how to use them; sent only when the server is available

    def instructions(self) -> str:
        return (f"Tools of the {self.server} server (read-only, they write nothing): "
                f"{', '.join(self.tools)}. {self.prompt}")


class PlanStep(Frozen):
    id: str  # the tool set
    title: str
    goal: str
    classes: tuple[str, ...]  # IRIs of the entities this step creates
    read: tuple[str, ...]  # section-title words to show the model first
    tools: tuple[str, ...]  # tools the step may call (besides evidence search)
    prompt: str
    verify: str = ""  # rules of the verification pass; empty: no pass
    external: tuple[ExternalTools, ...] = ()  # tools of external servers offered too


class Plan(Frozen):
    format: str = PLAN_FORMAT
    ontologies: tuple[str, ...]
    top_level: tuple[str, ...]
    system_prompt: str
    steps: tuple[PlanStep, ...]
    repair_tools: tuple[str, ...] = Field(default=())
    tool_servers: tuple[ToolServerInfo, ...] = ()  # how to reach the servers steps name

    def system_message(self, step: PlanStep, *, servers: set[str] | None = None) -> str:
        """What the agent sends as a step's system message: the system prompt, the step prompt
        and how to use the step's external tools (of `servers` only, when given)."""
        extra = [e.instructions() for e in step.external if servers is None or e.server in servers]
        return "\n\n".join([self.system_prompt, step.prompt, *extra])

    def to_json(self) -> str:
        """Canonical JSON: the same IR and hints give byte-identical text."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False,
                          sort_keys=True) + "\n"

    def step(self, step_id: str) -> PlanStep:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise InputError(f"no plan step {step_id!r}; steps: {', '.join(s.id for s in self.steps)}")


def compile_plan(
    ir: OntologyIR, *, surface: ToolSurface | None = None, hints: PlanHints | None = None
) -> Plan:
    """The plan of an IR: steps in tool-set order, each with its tools, prompt and rules."""
    surface = surface or compile_tools(ir)
    hints = hints or PlanHints()
    _check_external(ir, surface)
    shared = [t for t in surface.tools if t.toolset in SHARED_TOOLSETS]
    repair = [t for t in surface.tools if t.toolset == REPAIR_TOOLSET]
    # what every turn of a step sends besides its own tools and prompt
    fixed = (CLIENT_RESERVE + count_tokens(SYSTEM_PROMPT + "\n\n") + PROMPT_MARGIN
             + sum(tool_tokens(t) for t in (*shared, *repair)))
    steps = []
    for toolset in surface.toolsets:
        own = [t for t in surface.tools if t.toolset == toolset]
        if toolset in (*SHARED_TOOLSETS, REPAIR_TOOLSET) or not _creates(own):
            continue
        if surface.groups:  # bounded surface: one step per group of main classes
            steps += [_step(ir, step_id, own, shared=tuple(t.name for t in shared),
                            hints=hints, fixed=fixed, classes=classes)
                      for step_id, classes in surface.groups]
            continue
        steps.append(_step(ir, toolset, offered(ir, own), shared=tuple(t.name for t in shared),
                           hints=hints, fixed=fixed))
    return Plan(
        ontologies=ir.ontologies,
        top_level=ir.top_level,
        system_prompt=SYSTEM_PROMPT,
        steps=tuple(steps),
        repair_tools=tuple(t.name for t in repair),
        tool_servers=ir.tool_servers,
    )


def load_hints(path: Path, ir: OntologyIR) -> PlanHints:
    """Plan hints from YAML; a step id must be a tool set or a group of a bounded surface."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        hints = PlanHints.model_validate(data)
    except OSError as exc:
        raise InputError(f"cannot read plan hints {path}: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError) as exc:
        raise InputError(f"{path}: not valid plan hints ({str(exc).splitlines()[0]})") from None
    surface = compile_tools(ir)
    toolsets = (*surface.toolsets, *(step for step, _ in surface.groups))
    for step in hints.read:
        if step not in toolsets:
            raise InputError(f"{path}: plan hints name an unknown step {step!r} "
                             f"(steps: {', '.join(toolsets)})")
    return hints


def _creates(tools: list[ToolSpec]) -> bool:
    return any(t.action in ("create", "add") for t in tools)


def _step(ir: OntologyIR, toolset: str, tools: list[ToolSpec], *, shared: tuple[str, ...],
          hints: PlanHints, fixed: int, classes: tuple[str, ...] = ()) -> PlanStep:
    named = bool(classes)  # the classes are named in the prompt, not by their tools
    classes = classes or tuple(dict.fromkeys(t.target for t in tools
                                             if t.action in ("create", "add") and t.target))
    labels = [_label(ir, c) for c in classes]
    title = STEP_TITLES.get(toolset, f"{toolset.replace('_', ' ').capitalize()} entities")
    goal = (f"Record every {', '.join(labels)} the paper reports, with the values and links "
            "the tools of this step accept.")
    read = tuple(dict.fromkeys([
        *GENERIC_READ,
        *hints.every,
        *(w for label in labels for w in snake(label).split("_") if len(w) >= MIN_READ_WORD),
        *hints.read.get(toolset, []),
    ]))
    extra = [rule for c in classes if c in ir.classes
             for rule in ir.classes[c].verify.splitlines()]
    verify = verification_rules(ir, tools, extra=extra)
    external = _external(ir, tools)
    # the prompt gets what the budget leaves after the tools, the system prompt, the external
    # tools with their instructions and the verification pass (repair tools and rules)
    allowance = (STEP_BUDGET - fixed - count_tokens(verify) - sum(tool_tokens(t) for t in tools)
                 - sum(e.tokens + count_tokens("\n\n" + e.instructions()) for e in external))
    return PlanStep(
        id=toolset, title=title, goal=goal, classes=classes, read=read,
        tools=(*(t.name for t in tools), *shared),
        prompt=step_prompt(ir, title=title, goal=goal, tools=tools, max_tokens=allowance,
                           classes=classes if named else ()),
        verify=verify, external=external,
    )


def _external(ir: OntologyIR, tools: list[ToolSpec]) -> tuple[ExternalTools, ...]:
    """The external tools bound to a class the step's tools write (as their target or as an
    inline node)."""
    written = {t.target for t in tools if t.action in ("create", "add") and t.target}
    written |= {c for t in tools for arg in _inline(t.args) for c in arg.classes}
    return tuple(ExternalTools(server=server.name, tools=offer.tools, tokens=offer.tokens,
                               prompt=offer.prompt)
                 for server in ir.tool_servers for offer in server.offers
                 if written.intersection(offer.classes))


def _check_external(ir: OntologyIR, surface: ToolSurface) -> None:
    """An external tool may not take the name of a compiled tool (a call names one tool)."""
    for server in ir.tool_servers:
        for offer in server.offers:
            for name in offer.tools:
                if surface.get(name) is not None:
                    raise OntologyError(f"{offer.source}: tool {name!r} of tool server "
                                        f"{server.name!r} has the name of a compiled tool")


def _inline(args: tuple[ArgSpec, ...]) -> list[ArgSpec]:
    """Node arguments that create their node from inline fields, at any depth."""
    return [found for arg in args
            for found in ([arg] if arg.kind == "node" and arg.fields else []) + _inline(arg.fields)]


def _label(ir: OntologyIR, cls: str) -> str:
    info = ir.classes.get(cls)
    return info.label if info else local_name(cls)
