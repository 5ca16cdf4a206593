"""The bounded surface: what a T-Box gets when its per-class tools exceed the token budget.

Per-class `create_`/`add_` tools grow with the T-Box (CIDOC-CRM's classes each take a hundred
inherited properties). When they would not fit the budget (`kgctl.compiler.budget`), the
surface is one `create_entity` tool whose `type` is any class of the T-Box and whose `values`
are that class's arguments, keyed as `describe_tool` lists them (the argument names a
per-class tool would have, or prefixed property names); the server checks both against the
T-Box instead of enumerating them in the schema. Its size does not depend on the ontology.
The plan keeps one step per T-Box file, each naming at most MAX_STEP_CLASSES main classes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kgctl.compiler.generic import DRY_RUN, EVIDENCE, LINKS, READ, REPAIR, generic_tools
from kgctl.compiler.schema import input_schema
from kgctl.compiler.spec import ArgSpec, ToolSpec, ToolSurface

ENTITIES = "entities"
CREATE_ENTITY = "create_entity"
# main classes a plan step names (the others are reached through describe_tool)
MAX_STEP_CLASSES = 24


def entity_tool() -> ToolSpec:
    """`create_entity`: one entity of any class, its values checked against the T-Box."""
    return ToolSpec(
        name=CREATE_ENTITY, action="create", toolset=ENTITIES, description=(
            "Create one entity of any class of the ontology. `values` maps argument names "
            "(describe_tool with tool=create_entity and type=<class> lists them, with sub-classes"
            ") or prefixed property names to values; links to entities that do not exist yet "
            "are made later with `link`. A value the ontology expects but the paper does not "
            "state is reported as missing, not refused."),
        args=(ArgSpec(name="type", kind="type", required=True,
                      description="class of the new entity: prefixed name (e.g. ex:Person), "
                                  "local name or label"),
              ArgSpec(name="label", kind="label",
                      description="name of this entity as written in the paper"),
              ArgSpec(name="values", kind="values",
                      description="argument name or prefixed property name -> value (a list "
                                  "where several are allowed)"),
              DRY_RUN, EVIDENCE))


def bounded_surface(view: Any) -> ToolSurface:
    """`create_entity` and the generic tools, with the plan's groups of main classes: a main
    class is one a property's domain or range names, a top-level class, or one with no
    creatable super-class. `view` is the compiler's view of the IR (`view_of`)."""
    ir = view.ir
    named: dict[str, int] = {}
    for prop in ir.properties.values():
        for cls in (*prop.domain, *prop.range):
            named[cls] = named.get(cls, 0) + 1
    main = [c for c in ir.classes if view.creatable(c) and (
        c in named or c in ir.top_level
        or not any(view.creatable(a) for a in ir.classes[c].ancestors))]
    tools = sorted([entity_tool(), *generic_tools(soft=view.soft_minima())], key=lambda t: (
        (ENTITIES, LINKS, READ, REPAIR).index(t.toolset), t.name))
    return ToolSurface(
        tools=tuple(t.model_copy(update={"input_schema": input_schema(t.args)}) for t in tools),
        toolsets=(ENTITIES, LINKS, READ, REPAIR),
        groups=step_groups(main, file_of=view.toolset_of, weight=lambda c: named.get(c, 0)))


def is_entity_tool(tool: ToolSpec) -> bool:
    """Whether `tool` is the bounded surface's `create_entity` (a per-class surface may have a
    tool of that name for a class called Entity)."""
    return any(a.kind == "values" for a in tool.args)


def step_groups(classes: list[str], *, file_of: Callable[[str], str],
                weight: Callable[[str], int]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Plan steps of the bounded surface: (step id, main classes it names), one step per T-Box
    file in first-seen order, each naming its MAX_STEP_CLASSES heaviest main classes."""
    files: dict[str, list[str]] = {}
    for cls in classes:
        files.setdefault(file_of(cls), []).append(cls)
    return tuple((step, tuple(sorted(members, key=lambda c: (-weight(c), c))[:MAX_STEP_CLASSES]))
                 for step, members in files.items())
