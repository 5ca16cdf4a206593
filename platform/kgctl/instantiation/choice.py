"""Which class a create/add call makes (its `type` argument) and which arguments apply to it."""

from __future__ import annotations

from typing import Any

from kgctl.compiler import ToolSpec
from kgctl.compiler.naming import local_name
from kgctl.instantiation.planner import Draft
from kgctl.ontology.ir import OntologyIR


def chosen_type(ir: OntologyIR, draft: Draft, spec: ToolSpec, args: dict[str, Any]) -> str:
    """The class a create/add call makes: the tool's target, or the `type` argument's pick
    (its value, local name, prefixed name or IRI)."""
    type_arg = spec.arg("type")
    if type_arg is None:
        return spec.target or ""
    words = type_arg.enum or tuple(local_name(c) for c in type_arg.classes)
    raw = args.get("type")
    for word, cls in zip(words, type_arg.classes, strict=True):
        if raw in (word, cls, ir.curie(cls)) or raw == local_name(cls):
            return cls
    draft.fail("enum_value" if raw is not None else "required_missing", "type", raw,
               "choose the kind of entity", allowed=words)
    return spec.target or ""


def fields_for(ir: OntologyIR, spec: ToolSpec, cls: str) -> tuple:
    """The arguments that apply to the class chosen: all of them for the main class, else
    those of the main class plus the ones the chosen sub-class takes."""
    if cls == spec.target:
        return without_type(spec)
    own = {a.property for a in spec.args if a.property in {p.iri for p in ir.properties_of(cls)}}
    return tuple(a for a in without_type(spec)
                 if a.kind == "label" or a.property in own or a.required
                 or ir.applies(spec.target or "", a.property))


def without_type(spec: ToolSpec) -> tuple:
    return tuple(a for a in spec.args if a.kind != "type")


def given(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments that describe the new entity (`type` chose its class)."""
    return {k: v for k, v in args.items() if k != "type"}
