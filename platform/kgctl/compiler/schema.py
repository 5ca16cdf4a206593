"""Pydantic argument models (and so JSON schemas) built from argument specs.

The model is the canonical, strict form of a call; the checkers of kgctl.instantiation accept
a little more (unit aliases, labels for IRIs) and turn every deviation into a finding.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from kgctl.compiler.naming import local_name
from kgctl.compiler.spec import ArgSpec
from kgctl.store.base import Evidence

XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER = {"integer", "int", "long", "short", "nonNegativeInteger", "positiveInteger",
            "negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong"}
_FLOAT = {"decimal", "double", "float"}
_BOOLEAN = {"boolean"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def python_type(datatype: str | None) -> type:
    """Python type of an xsd datatype (strings for everything not numeric or boolean).

    >>> python_type(XSD + "integer"), python_type(XSD + "double"), python_type(None)
    (<class 'int'>, <class 'float'>, <class 'str'>)
    """
    name = local_name(datatype) if datatype and datatype.startswith(XSD) else ""
    if name in _INTEGER:
        return int
    if name in _FLOAT:
        return float
    if name in _BOOLEAN:
        return bool
    return str


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _enum(values: tuple[str, ...]) -> Any:
    return Literal[values]  # type: ignore[valid-type]


def _value_type(arg: ArgSpec, owner: str) -> Any:
    if arg.kind == "literal":
        return _enum(arg.enum) if arg.enum else python_type(arg.datatype)
    if arg.kind == "quantity":
        units = tuple(local_name(u) for u in arg.units)
        return create_model(
            owner + camel(arg.name), __base__=Strict,
            value=(float | None, Field(None, description="numeric value; omit for a "
                                       "qualitative value given only as label")),
            unit=(_enum(units) | None if units else str | None,
                  Field(None, description="OM-2 unit (common spellings accepted)")),
            label=(str | None, Field(None, description="the value as written, e.g. "
                                     "'room temperature', 'overnight'")),
        )
    if arg.kind == "node":
        if arg.enum:
            return _enum(tuple(local_name(v) if arg.node_mode is None else v for v in arg.enum))
        if not arg.fields:
            return str
        inline = model_for(owner + camel(arg.name), arg.fields)
        return str | inline
    if arg.kind == "type":
        return _enum(arg.enum or tuple(local_name(c) for c in arg.classes))
    return str


def _field(arg: ArgSpec, owner: str) -> tuple[Any, Any]:
    if arg.kind == "control":
        if arg.name == "dry_run":
            return bool, Field(False, description=arg.description)
        return Evidence | None, Field(None, description=arg.description)
    value = _value_type(arg, owner)
    if arg.many:
        value = list[value]  # type: ignore[valid-type]
    if arg.required:
        return value, Field(..., description=arg.description)
    return value | None, Field(None, description=arg.description)


def model_for(name: str, args: tuple[ArgSpec, ...]) -> type[BaseModel]:
    """A frozen pydantic model with one field per argument spec."""
    fields = {arg.name: _field(arg, name) for arg in args}
    return create_model(name, __base__=Strict, **fields)  # type: ignore[call-overload]
