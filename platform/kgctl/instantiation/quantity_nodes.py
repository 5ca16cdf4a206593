"""Quantity nodes of a call: a text as written ("160 °C") or {value, unit, label} becomes a
node of the quantity kind with its numerical value and resolved unit. A mixin of the planner's
`Draft`."""

from __future__ import annotations

import re
from typing import Any

from pyoxigraph import Literal, NamedNode

from kgctl.compiler.naming import local_name
from kgctl.compiler.spec import ArgSpec
from kgctl.instantiation.index import RDFS_LABEL
from kgctl.instantiation.values import coerce_number, literal

_QUANTITY_TEXT = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(\S.*?)\s*$")
_QUANTITY_KEYS = {"value", "unit", "label"}


class QuantityNodes:
    """Needs `ir`, `fail`, `text`, `mint` and `add` of the draft it is mixed into."""

    def quantity(self, arg: ArgSpec, item: Any, field: str) -> str | None:
        if isinstance(item, str):
            match = _QUANTITY_TEXT.match(item)
            item = ({"value": float(match[1]), "unit": match[2], "label": item} if match
                    else {"label": item})
        if not isinstance(item, dict):
            self.fail("datatype", field, item, "expected a text as written ('160 °C') or "
                      "{value, unit, label}")
            return None
        for key in sorted(set(item) - _QUANTITY_KEYS):
            self.fail("unknown_argument", f"{field}.{key}", item[key], f"no key '{key}'",
                      allowed=tuple(sorted(_QUANTITY_KEYS)))
        quantity = self.ir.quantities[arg.quantity or ""]
        label = item.get("label")
        if label is not None and self.text(f"{field}.label", label) is None:
            return None
        if item.get("value") is None and label is None:
            self.fail("required_missing", f"{field}.value", None, "give a numeric value with "
                      "a unit, or a label for a qualitative value ('room temperature')")
            return None
        node = self.mint(quantity.iri)
        if label is not None:
            self.add(node, RDFS_LABEL, Literal(label))
        if item.get("value") is not None:
            self.quantity_value(node, quantity.iri, arg, item, field)
        return node

    def quantity_value(self, node: str, quantity_iri: str, arg: ArgSpec, item: dict[str, Any],
                       field: str) -> None:
        quantity = self.ir.quantities[quantity_iri]
        value, problem = coerce_number(item["value"])
        if problem:
            self.fail("datatype", f"{field}.value", item["value"], problem,
                      hint="put qualitative values in 'label' and leave 'value' empty")
            self.add(node, quantity.value_property, Literal(str(item["value"])))
        else:
            if quantity.minimum is not None and value < quantity.minimum:
                self.fail("range", f"{field}.value", value, f"a {quantity.label} cannot be "
                          f"below {quantity.minimum:g} ({quantity.source})",
                          allowed=(f">= {quantity.minimum:g}",))
            self.add(node, quantity.value_property, literal(value, None))
        unit_names = tuple(local_name(u) for u in quantity.units)
        spelling = item.get("unit")
        if spelling is None:
            self.fail("required_missing", f"{field}.unit", None, "a numeric value needs a unit",
                      allowed=unit_names)
            return
        if not isinstance(spelling, str) or self.text(f"{field}.unit", spelling) is None:
            return
        unit = self.ir.resolve_unit(spelling, quantity.iri)
        if unit is None:
            known = self.ir.resolve_unit(spelling)
            code = "unit_incompatible" if known else "unit_unknown"
            message = (f"{local_name(known)} is not a unit of {quantity.label}" if known
                       else f"unknown unit '{spelling}'")
            self.fail(code, f"{field}.unit", spelling, message, allowed=unit_names)
            self.add(node, quantity.unit_property,
                     NamedNode(known) if known else Literal(spelling))
            return
        self.add(node, quantity.unit_property, NamedNode(unit))
