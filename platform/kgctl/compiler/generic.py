"""The tools every surface has whatever the ontology: `link`, the read tools and the repair
tools. Property and class names they take are checked by the server, which answers with the
allowed ones."""

from __future__ import annotations

from kgctl.compiler.spec import ArgSpec, ToolSpec

LINKS, READ, REPAIR = "links", "read", "repair"

DRY_RUN = ArgSpec(name="dry_run", kind="control",
                  description="validate and report what would be written, write nothing")
EVIDENCE = ArgSpec(name="evidence", kind="control",
                   description="where in the paper this was read: {quote, section, start, end}")
REF = "IRI or label of an existing entity of this paper"


FIND_MISSING = "find_missing"


def generic_tools(*, soft: bool = False) -> list[ToolSpec]:
    """The generic tools; `soft`: the T-Box has soft minima, so `find_missing` lists the
    values entities still lack (the verification pass uses it)."""
    entity = ArgSpec(name="entity", kind="subject", required=True, description=REF)
    missing = [ToolSpec(name=FIND_MISSING, action="read", toolset=READ, args=(), description=(
        "Values the ontology expects that entities of this paper still lack (someValuesFrom, "
        "minimum cardinality): add those the paper states."))] if soft else []
    return [*missing,
        ToolSpec(name="link", action="link", toolset=LINKS, description=(
            "Link two existing entities of this paper with an object property; domain, range "
            "and cardinality are checked."), args=(
            ArgSpec(name="subject", kind="subject", required=True, description=REF),
            ArgSpec(name="property", kind="literal", required=True,
                    description="object property, prefixed name (e.g. ex:hasPart)"),
            ArgSpec(name="object", kind="subject", required=True, description=REF),
            DRY_RUN, EVIDENCE)),
        ToolSpec(name="list_instances", action="read", toolset=READ, args=(
            ArgSpec(name="class_name", kind="literal",
                    description="only this class and its sub-classes"),),
            description="List entities of this paper (IRI, class, label)."),
        ToolSpec(name="describe_instance", action="read", toolset=READ, args=(entity,),
                 description="Every fact about one entity of this paper, outgoing and incoming."),
        ToolSpec(name="describe_tool", action="read", toolset=READ, args=(
            ArgSpec(name="tool", kind="literal", required=True, description="a tool name"),
            ArgSpec(name="argument", kind="literal",
                    description="one argument (dotted path): its full guidance"),
            ArgSpec(name="type", kind="literal",
                    description="for create_entity: the class whose arguments to list")),
            description="What the ontology says about a tool's entity and its arguments, "
                        "with allowed values, units and the rules checked."),
        ToolSpec(name="show_sequence", action="read", toolset=READ, args=(
            ArgSpec(name="container", kind="subject", required=True, description=REF),),
            description="The ordered members (e.g. steps) of one container, by order, with "
                        "gaps and duplicates reported."),
        ToolSpec(name="find_orphans", action="read", toolset=READ, args=(),
                 description="Entities of this paper that nothing points to and that are not "
                             "top-level entities."),
        ToolSpec(name="update_property", action="repair", toolset=REPAIR, args=(
            entity,
            ArgSpec(name="property", kind="literal", required=True,
                    description="property to change, prefixed name"),
            ArgSpec(name="value", kind="value", description="new value, as the create tools "
                    "take it; omit to remove the property"),
            DRY_RUN, EVIDENCE),
            description="Replace the value(s) of one property of an entity; all checks apply."),
        ToolSpec(name="delete_entity", action="repair", toolset=REPAIR, args=(
            entity, DRY_RUN, EVIDENCE),
            description="Delete an entity with the nodes that only it owns (quantities, inline "
                        "occurrences); later ordered members move up one place."),
    ]
