"""Named nodes of a call: found or created by (class, normalised label), or by (class,
normalised natural-key value) for classes with a key. A mixin of the planner's `Draft`."""

from __future__ import annotations

from typing import Any

from pyoxigraph import Literal

from kgctl.compiler.lookups import property_arg
from kgctl.compiler.spec import ArgSpec
from kgctl.instantiation.index import RDFS_LABEL
from kgctl.instantiation.values import coerce_literal
from kgctl.store.iris import normalise_key, normalise_label


class NamedNodes:
    """Needs `ir`, `index`, `_named`, `_keyed`, `fail`, `text`, `mint`, `add`, `fill` and
    `existing_values` of the draft it is mixed into."""

    def named(self, cls: str, arg: ArgSpec, item: dict[str, Any], field: str) -> str | None:
        """Find or create a label-identified node by (class, normalised label), or by
        (class, normalised key value) when the class has a natural key."""
        if self.ir.classes[cls].key is not None:
            return self.keyed(cls, arg, item, field)
        label = self.text(f"{field}.label" if len(item) > 1 else field, item.get("label"))
        if label is None:
            if "label" not in item:
                self.fail("required_missing", f"{field}.label", None, "a name is required")
            return None
        key = (cls, normalise_label(label))
        names = self.ir.enumeration(cls, RDFS_LABEL)
        if names and label not in names.values:  # exactly the names the schema lists
            self.fail("enum_value", field, label, "name outside the allowed set",
                      allowed=names.values)
        rest = {k: v for k, v in item.items() if k != "label"}
        if key in self._named:  # named earlier in this call: its facts must agree
            if rest:
                self.fill(self._named[key], cls, arg.fields, rest, field + ".", existing=True)
            return self._named[key]
        found = sorted(iri for iri in self.index.find_label(label)
                       if cls in self.index.types.get(iri, ()))
        if found:
            self._named[key] = found[0]
            if rest:
                self.fill(found[0], cls, arg.fields, rest, field + ".", existing=True)
            return found[0]
        node = self.mint(cls, key=label)
        self._named[key] = node
        self.add(node, RDFS_LABEL, Literal(label))
        fields = tuple(a for a in arg.fields if a.kind != "label")
        self.fill(node, cls, fields, rest, field + ".")
        return node

    def key_arg(self, cls: str, arg: ArgSpec) -> ArgSpec | None:
        """The argument spec of `cls`'s natural key (None when the class has none)."""
        key = self.ir.classes[cls].key
        if key is None:
            return None
        return next((a for a in arg.fields if a.property == key), None) or property_arg(
            self.ir, cls, key)

    def keyed(self, cls: str, arg: ArgSpec, item: dict[str, Any], field: str) -> str | None:
        """Find or create a node of a class with a natural key by its normalised key value;
        the label is an optional name, and a further name given for a found node is added
        (names of one entity are aliases)."""
        spec = self.key_arg(cls, arg)
        if spec is None:
            return None
        where = f"{field}.{spec.name}" if len(item) > 1 or spec.name not in item else field
        raw = item.get(spec.name)
        if raw is None:
            self.fail("required_missing", f"{field}.{spec.name}", None, f"'{spec.name}' "
                      f"identifies a {self.ir.classes[cls].label} and is required",
                      hint="give the value that identifies it; the label is optional")
            return None
        if isinstance(raw, str) and self.text(where, raw) is None:
            return None
        value, problem = coerce_literal(raw, spec.datatype)
        if problem:
            self.fail("datatype", where, raw, problem)
            return None
        norm = normalise_key(str(value))
        label = item.get("label")
        if label is not None:
            label = self.text(f"{field}.label", label)
            if label is None:
                return None
        fields = arg.fields or (spec,)
        rest = {k: v for k, v in item.items() if k not in ("label", spec.name)}
        node = self._keyed.get((cls, norm)) or next(iter(sorted(
            iri for iri in self.index.find_key(spec.property or "", str(value))
            if cls in self.index.types.get(iri, ()))), None)
        if node is None:
            node = self.mint(cls, key=norm, exact=True)
            self.fill(node, cls, tuple(a for a in fields if a.kind != "label"),
                      {k: v for k, v in item.items() if k != "label"}, field + ".")
        elif rest:
            self.fill(node, cls, fields, rest, field + ".", existing=True)
        self._keyed[(cls, norm)] = node
        if label is not None:
            self._named.setdefault((cls, normalise_label(label)), node)
            names = {normalise_label(str(o.value))
                     for o in self.existing_values(node, RDFS_LABEL)}
            if normalise_label(label) not in names:
                self.add(node, RDFS_LABEL, Literal(label))
        return node
