"""The write plan of `create_entity` (the bounded surface): its `type` names any creatable
class and its `values` that class's arguments, both checked here against the T-Box."""

from __future__ import annotations

from typing import Any

from kgctl.compiler.lookups import entity_fields, find_class, nearest
from kgctl.compiler.names import property_ref
from kgctl.compiler.naming import local_name
from kgctl.compiler.spec import ArgSpec
from kgctl.instantiation.planner import Draft


def plan_create_entity(draft: Draft, args: dict[str, Any]) -> None:
    """Mint one entity of the class `type` names and write `label` and `values` onto it."""
    cls = entity_type(draft, args.get("type"))
    values = args.get("values", {})
    if not isinstance(values, dict):
        draft.fail("datatype", "values", values, "expected an object: argument name -> value")
        values = {}
    if cls is None:
        return
    fields = entity_fields(draft.ir, cls)
    node = draft.mint(cls)
    draft.prefixes[node] = "values."  # where an argument of this entity is given
    label = {"label": args["label"]} if args.get("label") is not None else {}
    draft.fill(node, cls, tuple(a for a in fields if a.kind == "label"), label)
    rest = tuple(a for a in fields if a.kind != "label")
    draft.fill(node, cls, rest, _by_name(draft, rest, values), "values.")


def entity_type(draft: Draft, raw: Any) -> str | None:
    """The creatable class `raw` names, or a finding with the nearest class names."""
    if raw is None:
        draft.fail("required_missing", "type", None, "'type' is required: the class of the "
                   "new entity")
        return None
    text = draft.text("type", raw)
    if text is None:
        return None
    cls = find_class(draft.ir, text)
    if cls is None:
        names = sorted(draft.ir.curie(c) for c in draft.ir.classes
                       if find_class(draft.ir, draft.ir.curie(c)) == c)
        draft.fail("enum_value", "type", text, "no class of the ontology that can have "
                   "instances has this name", allowed=nearest(text, names),
                   hint="give a prefixed class name; describe_tool with tool=create_entity "
                        "and type=<class> lists its arguments")
    return cls


def _by_name(draft: Draft, args: tuple[ArgSpec, ...], values: dict[str, Any]
             ) -> dict[str, Any]:
    """`values` keyed by argument name (a key may also be the property's prefixed name,
    local name or IRI); one value where a list is taken becomes a one-item list; unknown
    keys are findings offering the nearest argument names."""
    ir = draft.ir
    names = {a.name: a for a in args}
    for arg in args:
        if arg.property:
            for alias in (arg.property, ir.curie(arg.property), property_ref(ir, arg.property),
                          local_name(arg.property)):
                names.setdefault(alias, arg)
    out: dict[str, Any] = {}
    for key, value in values.items():
        arg = names.get(key)
        if arg is None:
            draft.fail("unknown_argument", f"values.{key}", value, f"no argument '{key}' on "
                       "this class", allowed=nearest(key, [a.name for a in args]),
                       hint="describe_tool with tool=create_entity and this type lists them")
            continue
        out[arg.name] = [value] if arg.many and not isinstance(value, list) else value
    return out
