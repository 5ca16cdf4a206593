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

from kgctl.compiler.generic import DRY_RUN, EVIDENCE
from kgctl.compiler.spec import ArgSpec, ToolSpec

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


def step_groups(classes: list[str], *, file_of: Callable[[str], str],
                weight: Callable[[str], int]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Plan steps of the bounded surface: (step id, main classes it names), one step per T-Box
    file in first-seen order, each naming its MAX_STEP_CLASSES heaviest main classes."""
    files: dict[str, list[str]] = {}
    for cls in classes:
        files.setdefault(file_of(cls), []).append(cls)
    return tuple((step, tuple(sorted(members, key=lambda c: (-weight(c), c))[:MAX_STEP_CLASSES]))
                 for step, members in files.items())
