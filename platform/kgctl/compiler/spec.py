"""Tool specifications: what a compiled tool is called, what it accepts and what it writes.

An argument spec is also the write plan of that argument: which property it fills, in which
direction, and how its value becomes RDF (literal, quantity node, named node found by label,
new or existing occurrence).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

ArgKind = Literal[
    "label",  # rdfs:label of the new entity
    "literal",  # datatype property value
    "quantity",  # OM-2 style quantity node {value, unit, label}
    "node",  # object property value: a named node, an occurrence or a reference
    "container",  # the existing container a new ordered member joins (inverse link)
    "subject",  # the existing entity an `add_` tool attaches the new entity to
    "type",  # concrete class of the new entity when a range has several
    "control",  # dry_run, evidence: never written as facts
    "value",  # a value whose type the property it is given for decides (update_property)
    "values",  # argument name -> value, for the class a `type` argument picks (create_entity)
]
# how a node argument finds its value: found-or-created by label, or a new occurrence
# (inline object) / existing entity (IRI or label)
NodeMode = Literal["label", "occurrence"]
Action = Literal["create", "add", "link", "read", "repair", "session"]


class ArgSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: ArgKind
    description: str = ""
    property: str | None = None  # property IRI written by this argument
    required: bool = False
    many: bool = False
    datatype: str | None = None  # xsd IRI of a literal
    enum: tuple[str, ...] = ()  # allowed literal values or IRIs
    quantity: str | None = None  # quantity class IRI
    units: tuple[str, ...] = ()  # allowed unit IRIs of the quantity
    classes: tuple[str, ...] = ()  # allowed (concrete) classes of a node / container / subject
    node_mode: NodeMode | None = None
    fields: tuple[ArgSpec, ...] = ()  # inline fields of a new node
    facets: dict[str, str] = {}  # xsd facets of a restricted datatype (minInclusive, pattern)


class ToolSpec(BaseModel):
    """One compiled tool. `args` is the write plan; `input_schema` is what a client sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    toolset: str
    action: Action
    target: str | None = None  # class created, or container/owner class
    via: str | None = None  # property linking subject/container to the new entity
    order_property: str | None = None  # ordered members: the order property
    args: tuple[ArgSpec, ...] = ()
    input_schema: dict[str, Any] = {}

    def arg(self, name: str) -> ArgSpec | None:
        return next((a for a in self.args if a.name == name), None)


class ToolSurface(BaseModel):
    """Every compiled tool of one IR, in a stable order, plus its tool sets in plan order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tools: tuple[ToolSpec, ...]
    toolsets: tuple[str, ...]
    # bounded surface only (kgctl.compiler.bounded): plan step id -> the main classes it names
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def get(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def listing(self) -> list[dict[str, Any]]:
        """Name, tool set, description and input JSON schema of every tool (the golden view)."""
        return [
            {"name": t.name, "toolset": t.toolset, "description": t.description,
             "input_schema": t.input_schema}
            for t in self.tools
        ]
