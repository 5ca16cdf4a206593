"""Turn a record document into a tree of slot records, the unit the scorer aligns.

A scalar field is a slot; a list of names is one slot (two name lists agree when they share a
name: a list gives the aliases of one entity); a nested object contributes its fields under a
dotted path; a list of objects becomes child records, aligned one-to-one by the scorer.
``false`` and "N/A" are empty: under the open world an unstated flag is not a claim.

>>> from pydantic import BaseModel
>>> class Part(BaseModel):
...     code: str | None = None
...     names: tuple[str, ...] | None = None
>>> class Doc(BaseModel):
...     id: str | None = None
...     parts: tuple[Part, ...] = ()
>>> node = to_node(Doc(id="1", parts=(Part(code="[A2]", names=("a2",)),)))
>>> node.slots, node.children["parts"][0].slots
({'id': '1'}, {'code': '[A2]', 'names': ('a2',)})
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from kgctl.evaluation import values

# Free text and positions are not facts the graph must hold verbatim; steps are unordered.
IGNORED_FIELDS = frozenset({"comment", "procedureName", "stepNumber"})
Value = str | float | int | bool | tuple[str, ...] | None


@dataclass(frozen=True)
class Node:
    """One record: its slots by field path, and its child record lists by field path."""

    path: str
    slots: dict[str, Value] = field(default_factory=dict)
    children: dict[str, list[Node]] = field(default_factory=dict)


def to_node(model: BaseModel, *, path: str = "") -> Node:
    """The slot tree of a validated record (see module docstring)."""
    node = Node(path=path)
    _fill(node, model, prefix="")
    return node


def _fill(node: Node, model: BaseModel, *, prefix: str) -> None:
    for name in type(model).model_fields:
        if name in IGNORED_FIELDS:
            continue
        value = getattr(model, name)
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            _fill(node, value, prefix=f"{key}.")
        elif isinstance(value, tuple) and value and isinstance(value[0], BaseModel):
            child_path = f"{node.path}.{key}" if node.path else key
            node.children[key] = [to_node(v, path=child_path) for v in value]
        elif isinstance(value, tuple) and not value:
            continue  # an empty list of objects holds no slots
        else:
            node.slots[key.removesuffix("_")] = None if values.is_empty(value) else value


def slots_agree(gold: Value, pred: Value) -> bool:
    """Exact agreement of two non-empty canonical values; name lists agree on a shared name.

    >>> slots_agree(("bdc", "isophthalic acid"), ("isophthalic acid",))
    True
    >>> slots_agree("120 degreeCelsius", "120 kelvin")
    False
    """
    if isinstance(gold, tuple) and isinstance(pred, tuple):
        return bool(set(gold) & set(pred))
    return gold == pred


def count_slots(node: Node) -> int:
    """Non-empty slots of a record and all its children."""
    own = sum(1 for v in node.slots.values() if v is not None)
    return own + sum(count_slots(c) for kids in node.children.values() for c in kids)
