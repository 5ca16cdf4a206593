"""Checks a write plan makes against what the paper already holds: orders within a container
(unique, contiguous), a natural key held by one entity only, and max-one / cardinality room
for another value. Each reports findings on the draft; none writes."""

from __future__ import annotations

from typing import Any

from pyoxigraph import NamedNode

from kgctl.instantiation.planner import Draft
from kgctl.instantiation.values import coerce_literal
from kgctl.instantiation.walks import MEMBERS
from kgctl.ontology.ir import OntologyIR, OrderingRule

UNBOUNDED = 10**9


def check_order(draft: Draft, container: str, member: str, order_prop: str,
                raw: Any, field: str, *, moving: str | None = None) -> None:
    """Orders within a container are unique and contiguous start..N."""
    rule = _rule(draft.ir, member, order_prop)
    value, problem = coerce_literal(raw, range_of(draft.ir, order_prop))
    if raw is None or problem or rule is None:
        return  # missing / non-integer orders are reported by `fill`
    rows = draft.store.query(MEMBERS, bindings={
        "c": NamedNode(container), "member": NamedNode(member),
        "order": NamedNode(order_prop)}, paper_id=draft.pid)
    taken = {}
    for row in rows:
        if row["m"].value != moving and row["o"] is not None:
            taken[row["m"].value] = order_number(row["o"].value)
    count = len({m for m in taken} | ({moving} if moving else set()))
    last = rule.start + count - (0 if moving is None else 1)
    expected = last if rule.contiguous else max(taken.values(), default=rule.start - 1) + 1
    if value < rule.start:
        draft.fail("range", field, value, f"orders start at {rule.start}",
                   allowed=(expected,))
    elif value in taken.values():
        holder = next(m for m, o in taken.items() if o == value)
        draft.fail("order_duplicate", field, value, f"order {value} is already taken by "
                   f"{draft.index.label_of(holder) or holder}", allowed=(expected,),
                   hint="use the next free order, or update the order of the other member "
                   "first (show_sequence lists them)")
    elif rule.contiguous and value > expected:
        draft.fail("order_gap", field, value, f"order {value} would leave a gap after "
                   f"{expected - 1}", allowed=(expected,),
                   hint=f"orders are contiguous from {rule.start}")


def check_key_free(draft: Draft, entity: str, cls: str, prop: str, value: Any) -> None:
    """A natural key value identifies one entity: no other entity of the class holds it."""
    others = tuple(sorted(i for i in draft.index.find_key(prop, str(value))
                          if i != entity and cls in draft.index.types.get(i, ())))
    if others:
        draft.fail("duplicate", "value", value, f"another {draft.ir.classes[cls].label} "
                   f"already has this {draft.ir.curie(prop)}, which identifies it",
                   allowed=others, hint="link that entity instead, or delete one of them")


def check_room(draft: Draft, subject: str, prop: str, field: str) -> None:
    """Max-one: `subject` may take another value of `prop`."""
    ir = draft.ir
    classes = [t for t in draft.types_of(subject) if t in ir.classes] or [""]
    limit = min((_max(ir.cardinality(c, prop).max) for c in classes), default=None)
    functional = ir.properties[prop].functional if prop in ir.properties else False
    limit = 1 if functional else limit
    existing = draft.existing_values(subject, prop)
    if limit is not None and len(existing) >= limit:
        draft.fail("max_one" if limit == 1 else "cardinality", field, ir.curie(prop),
                   f"{draft.index.label_of(subject) or subject} already has "
                   f"{len(existing)} value(s) of {ir.curie(prop)} (max {limit})",
                   allowed=tuple(o.value for o in existing),
                   hint="update or delete the existing one instead")


def order_number(text: str) -> int:
    """A stored order as an integer (-1 when it is not a number).

    >>> order_number("3"), order_number("2.0"), order_number("two")
    (3, 2, -1)
    """
    try:
        return int(float(text))
    except ValueError:
        return -1


def range_of(ir: OntologyIR, prop: str) -> str | None:
    info = ir.properties.get(prop)
    return info.range[0] if info and info.range else None


def _max(bound: int | None) -> int:
    return UNBOUNDED if bound is None else bound


def _rule(ir: OntologyIR, member: str, order_prop: str) -> OrderingRule | None:
    return next((r for r in ir.orderings
                 if r.member_property == member and r.order_property == order_prop), None)
