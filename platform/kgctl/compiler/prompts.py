"""Instantiation prompts, compiled from the IR and the tool surface (pure, deterministic).

A step prompt names the entities the step creates with the tools that create them, then the
ontology's own words about them (`rdfs:comment`: soft guidance, never enforced) and the hard
rules the tools check (cardinalities, allowed values and units, ordering), each with its source.

>>> from kgctl.ontology.ir import ClassInfo, OntologyIR
>>> ir = OntologyIR(classes={"http://x/A": ClassInfo(iri="http://x/A", name="A", label="a thing",
...                                                  comment="One per paper.")})
>>> print(class_block(ir, "http://x/A", tools=("create_a",)))
- a thing (create_a): One per paper.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgctl.compiler.spec import ArgSpec, ToolSpec
from kgctl.ontology.ir import OntologyIR

# Comments are cut to this many characters per entity to keep prompts within context budgets.
MAX_COMMENT_CHARS = 1500
MAX_LISTED_VALUES = 12

SYSTEM_PROMPT = """\
You build the knowledge graph of one paper, and you may change it only by calling the tools \
offered. The tools are compiled from the ontology: their arguments are the ontology's classes, \
properties, units and allowed values.
- Record only what the paper states; never guess values. Leave an argument out when the paper \
is silent about it.
- Quote your evidence: pass `evidence` {quote, section, start, end} with the sentence you read.
- A call either writes everything or nothing. When a tool answers with an error (status \
"rejected"), read its code, field, allowed values and hint, and repair that call; do not repeat \
a rejected call unchanged.
- Refer to entities you created by the IRI the tool returned (or their exact label).
- Work through the plan step you are given; reply without tool calls when it is complete."""


def step_prompt(
    ir: OntologyIR, *, title: str, goal: str, tools: Iterable[ToolSpec]
) -> str:
    """The instruction block of one plan step."""
    tools = list(tools)
    targets = _targets(tools)
    lines = [f"Plan step: {title}.", f"Goal: {goal}", "", "Entities of this step:"]
    lines += [class_block(ir, cls, tools=names) for cls, names in targets.items()]
    rules = [rule for t in tools for rule in tool_rules(ir, t)]
    if rules:
        lines += ["", "Rules the tools enforce (a violation is returned as feedback):"]
        lines += [f"- {rule}" for rule in dict.fromkeys(rules)]
    guidance = [g for t in tools for g in argument_guidance(ir, t)]
    if guidance:
        lines += ["", "What the ontology says about the arguments (guidance, not enforced):"]
        lines += [f"- {g}" for g in dict.fromkeys(guidance)]
    return "\n".join(lines)


def verification_rules(ir: OntologyIR, tools: Iterable[ToolSpec], *, extra: Iterable[str] = ()
                       ) -> str:
    """What the verification pass of a step checks: the hard rules of its entities plus any
    configured per-class rules."""
    rules = [rule for t in tools for rule in tool_rules(ir, t)]
    return "\n".join(f"- {rule}" for rule in dict.fromkeys([*rules, *extra]))


# Pure building blocks


def _targets(tools: list[ToolSpec]) -> dict[str, tuple[str, ...]]:
    targets: dict[str, list[str]] = {}
    for tool in tools:
        if tool.target and tool.action in ("create", "add"):
            targets.setdefault(tool.target, []).append(tool.name)
    return {cls: tuple(names) for cls, names in targets.items()}


def class_block(ir: OntologyIR, cls: str, *, tools: tuple[str, ...]) -> str:
    info = ir.classes.get(cls)
    label = info.label if info else ir.curie(cls)
    comment = _clip(info.comment) if info and info.comment else ""
    head = f"- {label} ({', '.join(tools)})"
    return f"{head}: {comment}" if comment else head


def tool_rules(ir: OntologyIR, tool: ToolSpec) -> list[str]:
    """Hard rules of a tool's arguments, in words, from the argument specs it was compiled to."""
    rules = []
    for arg in _walk(tool.args):
        where = f"{tool.name}.{arg.name}"
        if arg.required and arg.kind not in ("control", "subject", "container"):
            rules.append(f"{where} is required")
        if arg.property and not arg.many and arg.kind in ("literal", "quantity", "node"):
            rules.append(f"{where} takes at most one value")
        if arg.enum and arg.kind != "type":
            rules.append(f"{where} must be one of: {_values(ir, arg.enum)}")
        if arg.units:
            rules.append(f"{where} unit must be one of: {_values(ir, arg.units)}")
    if tool.order_property:
        rule = next((o for o in ir.orderings if o.order_property == tool.order_property), None)
        if rule is not None:
            container = ir.classes.get(rule.container_class)
            name = container.label if container else ir.curie(rule.container_class)
            span = "contiguous " if rule.contiguous else ""
            rules.append(f"{tool.name}: the positions of the members of one {name} are unique "
                         f"and {span}from {rule.start}, in the order the paper describes them")
    return rules


def argument_guidance(ir: OntologyIR, tool: ToolSpec) -> list[str]:
    out = []
    for arg in _walk(tool.args):
        info = ir.properties.get(arg.property or "")
        if info and info.comment:
            out.append(f"{arg.name} ({info.label}): {_clip(info.comment)}")
    return out


def _walk(args: tuple[ArgSpec, ...]) -> list[ArgSpec]:
    out = []
    for arg in args:
        out.append(arg)
        out.extend(_walk(arg.fields))
    return out


def _values(ir: OntologyIR, values: tuple[str, ...]) -> str:
    shown = [ir.curie(v) if v.startswith("http") else v for v in values[:MAX_LISTED_VALUES]]
    more = len(values) - len(shown)
    return ", ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_COMMENT_CHARS else text[:MAX_COMMENT_CHARS - 1] + "…"
