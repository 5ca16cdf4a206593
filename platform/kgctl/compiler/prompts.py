"""Instantiation prompts, compiled from the IR and the tool surface (pure, deterministic).

Each thing is said once. The system prompt states the conventions every tool shares
(references, quantities, evidence, dry runs, feedback). A step prompt names the entities the
step creates with their tools, then the rules the tools check that their schemas cannot show
(ordering, natural keys), then the ontology's own words (`rdfs:comment`: soft guidance, never
enforced), cut to what the step's token budget leaves; `describe_tool` gives the full text, the
units and the allowed values on demand.

>>> from kgctl.ontology.ir import ClassInfo, OntologyIR
>>> ir = OntologyIR(classes={"http://x/A": ClassInfo(iri="http://x/A", name="A", label="a thing",
...                                                  comment="One per paper.")})
>>> print(class_block(ir, "http://x/A", tools=("create_a",)))
- a thing (create_a): One per paper.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kgctl.compiler.naming import local_name
from kgctl.compiler.spec import ArgSpec, ToolSpec
from kgctl.ontology.ir import OntologyIR
from kgctl.tokens import count_tokens

# Ontology comments in a step prompt are cut to (class, argument) characters, the first pair
# whose prompt fits the step's token allowance (full text: describe_tool).
CLIPS = ((240, 120), (200, 100), (160, 80), (120, 60), (200, 0), (160, 0), (120, 0), (80, 0),
         (0, 0))
# describe_tool without an argument shows this much of each argument's comment
GUIDE_EXCERPT_CHARS = 120
# section headings inside a comment ("[Definition]", "【Warning】") say nothing in an excerpt
_HEADING = re.compile(r"(?:\[[A-Z][a-z]{3,}(?: [A-Za-z-]+)*\]|【[^】]{1,20}】)\s*")

SYSTEM_PROMPT = """\
You build the knowledge graph of one paper, and you may change it only by calling the tools \
offered. The tools are compiled from the ontology: their arguments are its properties, units \
and allowed values.
- Record only what the paper states; never guess. Leave out an argument the paper is silent \
about.
- `label` is the name of an entity as the paper writes it. An argument that refers to an \
existing entity takes the IRI a tool returned or its exact label. A named thing (a text where \
an object is also allowed) is found or created by that name.
- A quantity is a text as written ("160 °C", "12 h", "room temperature") or {value, unit, label}.
- Pass `evidence` {quote, section, start, end} with the sentence you read; `dry_run: true` \
checks a call without writing.
- A call writes everything or nothing. A rejected call returns code, field, allowed values and \
a hint: repair it, never repeat it unchanged. describe_tool gives a tool's full guidance.
- Work through the plan step you are given; reply without tool calls when it is complete."""

VERIFY_MISSING = ("find_missing lists values the ontology expects that entities still lack: add "
                  "those the paper states, leave the others")
VERIFY_FIRST = ("every value is stated in the paper for that entity, and nothing the paper "
                "reports for this step is missing")


def step_prompt(
    ir: OntologyIR, *, title: str, goal: str, tools: Iterable[ToolSpec],
    max_tokens: int | None = None, classes: tuple[str, ...] = (),
) -> str:
    """The instruction block of one plan step. With `max_tokens`, the ontology's comments are
    cut shorter (down to none) until the block fits; what they say stays in describe_tool.
    `classes`: the entities a `create_entity` step names (its tools name none)."""
    tools = list(tools)
    text = ""
    for class_chars, argument_chars in CLIPS:
        text = _step_text(ir, title=title, goal=goal, tools=tools, class_chars=class_chars,
                          argument_chars=argument_chars, classes=classes)
        if max_tokens is None or count_tokens(text) <= max_tokens:
            break
    return text


def _step_text(ir: OntologyIR, *, title: str, goal: str, tools: list[ToolSpec],
               class_chars: int, argument_chars: int, classes: tuple[str, ...] = ()) -> str:
    lines = [f"Plan step: {title}.", f"Goal: {goal}", "", "Entities of this step:"]
    lines += [class_block(ir, cls, tools=names, limit=class_chars)
              for cls, names in _targets(tools).items()]
    lines += [class_block(ir, cls, tools=(f"type {ir.curie(cls)}",), limit=class_chars)
              for cls in classes]
    if classes:
        lines.append("Any other class of the ontology is created the same way (describe_tool "
                     "with tool=create_entity and type=<class> lists its arguments and "
                     "sub-classes).")
    rules = [rule for t in tools for rule in tool_rules(ir, t)]
    if rules:
        lines += ["", "Rules the tools enforce (a violation is returned as feedback):"]
        lines += [f"- {rule}" for rule in dict.fromkeys(rules)]
    guidance = argument_guidance(ir, tools, limit=argument_chars) if argument_chars else []
    if guidance:
        lines += ["", "What the ontology says about the arguments (guidance, not enforced; "
                  "describe_tool has the full text):"]
        lines += [f"- {g}" for g in guidance]
    return "\n".join(lines)


def verification_rules(ir: OntologyIR, tools: Iterable[ToolSpec], *, extra: Iterable[str] = ()
                       ) -> str:
    """What the verification pass of a step checks: that the calls match the paper, the rules
    of its entities the schemas cannot show, and any configured per-class rules."""
    rules = [rule for t in tools for rule in tool_rules(ir, t)]
    if any(c.soft for c in ir.cardinalities):
        rules.append(VERIFY_MISSING)
    return "\n".join(f"- {rule}" for rule in dict.fromkeys([VERIFY_FIRST, *rules, *extra]))


def tool_guide(ir: OntologyIR, tool: ToolSpec, argument: str | None = None
               ) -> list[dict[str, Any]] | None:
    """What `describe_tool` returns. Without `argument`: the tool's entity with the ontology's
    full comment and rules, then each argument (dotted path) with its property, shape, allowed
    values or units and the opening of its comment. With `argument`: that argument and the
    fields inside it, each with its full comment; None when the tool has no such argument."""
    paths = _walk(tool.args)
    if argument is not None:
        chosen = [(p, a) for p, a in paths if p == argument or p.startswith(argument + ".")]
        return [_argument_row(ir, p, a, limit=None) for p, a in chosen] or None
    head: dict[str, Any] = {"tool": tool.name, "description": tool.description}
    target = ir.classes.get(tool.target or "")
    if target is not None and target.comment:
        head["guidance"] = " ".join(target.comment.split())
    rules = tool_rules(ir, tool)
    if rules:
        head["rules"] = rules
    # an excerpt for each argument, none for the fields inside one (ask for the argument)
    return [head, *(_argument_row(ir, p, a, limit=0 if "." in p else GUIDE_EXCERPT_CHARS)
                    for p, a in paths)]


def _argument_row(ir: OntologyIR, path: str, arg: ArgSpec, *, limit: int | None
                  ) -> dict[str, Any]:
    row: dict[str, Any] = {"argument": path, "required": arg.required, "list": arg.many}
    info = ir.properties.get(arg.property or "")
    text = arg.description if info is None else info.comment
    if info is not None:
        row["property"] = ir.curie(info.iri)
    if text and limit != 0:
        row["guidance"] = " ".join(text.split()) if limit is None else _clip(text, limit)
    if arg.enum and arg.kind != "type":
        row["allowed"] = [ir.curie(v) if v.startswith("http") else v for v in arg.enum]
    if arg.units:
        row["units"] = [local_name(u) for u in arg.units]
    return row


# Pure building blocks


def _targets(tools: list[ToolSpec]) -> dict[str, tuple[str, ...]]:
    targets: dict[str, list[str]] = {}
    for tool in tools:
        if tool.target and tool.action in ("create", "add"):
            targets.setdefault(tool.target, []).append(tool.name)
    return {cls: tuple(names) for cls, names in targets.items()}


def class_block(ir: OntologyIR, cls: str, *, tools: tuple[str, ...],
                limit: int = CLIPS[0][0]) -> str:
    info = ir.classes.get(cls)
    label = info.label if info else ir.curie(cls)
    comment = _clip(info.comment, limit) if info and info.comment and limit else ""
    head = f"- {label} ({', '.join(tools)})"
    return f"{head}: {comment}" if comment else head


def tool_rules(ir: OntologyIR, tool: ToolSpec) -> list[str]:
    """Hard rules of a tool that its input schema cannot show: natural keys and ordering
    (units are listed by describe_tool and in the feedback; spellings are resolved)."""
    rules = [f"{tool.name}.{path}: {key}" for path, arg in _walk(tool.args)
             if (key := _key_of(ir, arg))]
    if tool.order_property:
        rule = next((o for o in ir.orderings if o.order_property == tool.order_property), None)
        if rule is not None:
            container = ir.classes.get(rule.container_class)
            name = container.label if container else ir.curie(rule.container_class)
            span = "contiguous " if rule.contiguous else ""
            rules.append(f"the {local_name(tool.order_property)} positions of the members of "
                         f"one {name} are unique and {span}from {rule.start}, in the order the "
                         "paper describes them")
    return rules


def _key_of(ir: OntologyIR, arg: ArgSpec) -> str:
    """The natural-key rule of a node argument whose class has a key, else ''."""
    if arg.kind != "node" or len(arg.classes) != 1 or arg.classes[0] not in ir.classes:
        return ""
    info = ir.classes[arg.classes[0]]
    if info.key is None or info.key not in ir.properties:
        return ""
    key = ir.properties[info.key]
    return (f"a {info.label} is identified by its {key.label}: a text is that value, the same "
            "value is the same entity")


def argument_guidance(ir: OntologyIR, tools: Iterable[ToolSpec], *,
                      limit: int = CLIPS[0][1]) -> list[str]:
    """One line per property the tools write that has a comment (first argument name wins)."""
    out: dict[str, str] = {}
    for tool in tools:
        for _, arg in _walk(tool.args):
            info = ir.properties.get(arg.property or "")
            if info and info.comment and info.iri not in out:
                out[info.iri] = f"{arg.name}: {_clip(info.comment, limit)}"
    return list(out.values())


def _walk(args: tuple[ArgSpec, ...], prefix: str = "") -> list[tuple[str, ArgSpec]]:
    out = []
    for arg in args:
        out.append((prefix + arg.name, arg))
        out.extend(_walk(arg.fields, f"{prefix}{arg.name}."))
    return out


def _clip(text: str, limit: int) -> str:
    """`text` on one line without section headings, cut at a word boundary to about `limit`
    characters.

    >>> _clip("[Definition] A step that [Cu2] adds. [Type identity] More words here.", 30)
    'A step that [Cu2] adds. More …'
    """
    text = " ".join(_HEADING.sub("", text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"
