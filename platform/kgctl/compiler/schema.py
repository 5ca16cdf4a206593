"""Compact JSON schemas built from argument specs: exactly what the server accepts, no more.

A schema says the shape of every argument (type, enumeration, list or single value, required)
and nothing a model does not need: no titles, no null branches, no defaults. An object shape
used more than once in a tool is written once under `$defs`. A quantity is a text as written
("160 °C", "2 h", "room temperature") or `{value, unit, label}`; a unit is any spelling the
server resolves (checked there: `unit_unknown`, `unit_incompatible`). Enumerations, types and
lists are exact: the server refuses what the schema does not show.

>>> from kgctl.compiler.spec import ArgSpec
>>> schema = input_schema((ArgSpec(name="n", kind="literal", datatype=XSD + "integer",
...                                 required=True),))
>>> schema == {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
...            "additionalProperties": False}
True
"""

from __future__ import annotations

import json
from typing import Any

from kgctl.compiler.naming import local_name
from kgctl.compiler.spec import ArgSpec

XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER = {"integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
            "negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong"}
_FLOAT = {"decimal", "double", "float"}
_BOOLEAN = {"boolean"}
STRING = {"type": "string"}
_QUANTITY_OBJECT = {"type": "object", "properties": {
    "value": {"type": "number"}, "unit": STRING, "label": STRING}, "additionalProperties": False}
QUANTITY = {"anyOf": [STRING, _QUANTITY_OBJECT]}
EVIDENCE = {"type": "object", "properties": {
    "quote": STRING, "section": STRING, "start": {"type": "integer"},
    "end": {"type": "integer"}}, "required": ["quote"], "additionalProperties": False}


def json_type(datatype: str | None) -> str:
    """JSON type of an xsd datatype (strings for everything not numeric or boolean).

    >>> json_type(XSD + "integer"), json_type(XSD + "double"), json_type(None)
    ('integer', 'number', 'string')
    """
    name = local_name(datatype) if datatype and datatype.startswith(XSD) else ""
    if name in _INTEGER:
        return "integer"
    if name in _FLOAT:
        return "number"
    if name in _BOOLEAN:
        return "boolean"
    return "string"


def input_schema(args: tuple[ArgSpec, ...]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, repeated shapes under `$defs`."""
    return _hoist(_object(args))


def _object(args: tuple[ArgSpec, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object",
                              "properties": {a.name: _argument(a) for a in args}}
    required = [a.name for a in args if a.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _argument(arg: ArgSpec) -> dict[str, Any]:
    value = _value(arg)
    if arg.many:
        value = {"type": "array", "items": value}
    if arg.description and arg.property is None and (
            arg.kind in ("literal", "value", "values") or (arg.kind == "type" and not arg.classes)):
        # generic tools' free-form arguments; what an ontology argument means (its comment)
        # is said once, in the step prompt and by describe_tool
        value = {**value, "description": arg.description}
    return value


def _value(arg: ArgSpec) -> dict[str, Any]:
    if arg.kind == "control":
        return {"type": "boolean"} if arg.name == "dry_run" else EVIDENCE
    if arg.kind == "literal":
        return {"enum": list(arg.enum)} if arg.enum else {"type": json_type(arg.datatype)}
    if arg.kind == "value":
        return {}  # any JSON value: the property it is given for decides its type
    if arg.kind == "values":
        return {"type": "object"}
    if arg.kind == "quantity":
        return QUANTITY
    if arg.kind == "node":
        if arg.enum:
            return {"enum": [local_name(v) if arg.node_mode is None else v for v in arg.enum]}
        if not arg.fields:
            return STRING
        return {"anyOf": [STRING, _object(arg.fields)]}
    if arg.kind == "type":  # no classes: any class of the T-Box, checked by the server
        return ({"enum": list(arg.enum or (local_name(c) for c in arg.classes))}
                if arg.enum or arg.classes else dict(STRING))
    return STRING


def _hoist(schema: dict[str, Any]) -> dict[str, Any]:
    """Write every object or quantity shape that occurs more than once in `schema` once,
    under `$defs`, and refer to it."""
    seen: dict[str, int] = {}

    def count(node: Any) -> None:
        if isinstance(node, dict):
            if node is not schema and _hoistable(node):
                key = _key(node)
                seen[key] = seen.get(key, 0) + 1
            for child in node.values():
                count(child)
        elif isinstance(node, list):
            for child in node:
                count(child)

    count(schema)
    names: dict[str, str] = {}
    defs: dict[str, Any] = {}

    def replace(node: Any) -> Any:
        if isinstance(node, dict):
            if node is not schema and _hoistable(node) and seen.get(_key(node), 0) > 1:
                key = _key(node)
                if key not in names:
                    names[key] = _def_name(node, len(names))
                    defs[names[key]] = {k: replace(v) for k, v in node.items()}
                return {"$ref": f"#/$defs/{names[key]}"}
            return {k: replace(v) for k, v in node.items()}
        if isinstance(node, list):
            return [replace(child) for child in node]
        return node

    out = replace(schema)
    return {"$defs": defs, **out} if defs else out


def _hoistable(node: dict[str, Any]) -> bool:
    return node == QUANTITY or ("properties" in node and node != _QUANTITY_OBJECT)


def _key(node: dict[str, Any]) -> str:
    return json.dumps(node, sort_keys=True)


def _def_name(node: dict[str, Any], n: int) -> str:
    if node == QUANTITY:
        return "quantity"
    if node == EVIDENCE:
        return "evidence"
    return f"object{n + 1}"
