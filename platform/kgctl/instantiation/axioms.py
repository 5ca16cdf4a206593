"""OWL restrictions checked on the entities one call creates or changes, over the draft.

One checker per restriction kind, each with its finding code: `some` (someValuesFrom: a value
of the filler class, "required" on creation), `all` (allValuesFrom: every value of the filler),
`has_value` (the stated value; filled in when a new entity gives none), qualified and
unqualified `min`/`max`/`exact` counts (`cardinality`; max 0 means "not on this class"), and
`all`/`max` stated on an inverse property (checked on the incoming links). A minimum stated on
an inverse property cannot hold when the entity is created; it is listed, not enforced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyoxigraph import Literal, NamedNode

from kgctl.compiler.naming import is_opaque
from kgctl.instantiation.planner import Draft
from kgctl.ontology.ir import OntologyIR, Restriction
from kgctl.ontology.kinds import satisfiable
from kgctl.ontology.rules import UNIVERSAL_FILLERS

XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS_LITERAL = "http://www.w3.org/2000/01/rdf-schema#Literal"
MAX_ENTITIES = 8  # entities offered in `allowed`
Incoming = Callable[[str, str], list[str]]  # (node, property) -> subjects linking to node


def rules_by_class(ir: OntologyIR) -> dict[str, list[Restriction]]:
    found: dict[str, list[Restriction]] = {}
    for rule in ir.restrictions:
        prop = ir.properties.get(rule.on_property)
        if rule.source.kind == "owl" and prop is not None and prop.kind != "annotation":
            found.setdefault(rule.on_class, []).append(rule)
    return found


def check_entity(draft: Draft, rules: dict[str, list[Restriction]], node: str, *, new: bool,
                 incoming: Incoming, inverse_only: bool = False) -> None:
    """Report every restriction of `node`'s classes that its facts (stored + pending) break;
    `inverse_only` for an entity a call only links to."""
    ir: OntologyIR = draft.ir
    lineage = {a for t in draft.types_of(node) for a in (t, *_ancestors(ir, t))}
    stated = [rule for cls in sorted(lineage) for rule in rules.get(cls, ())
              if rule.inverse or not inverse_only]
    # hasValue first: a value it writes counts for the cardinalities checked after it
    stated.sort(key=lambda r: r.kind != "has_value")
    facts = draft.facts(node) if stated else set()
    for rule in stated:
        if rule.inverse:
            _inverse(draft, rule, node, incoming(node, rule.on_property))
            continue
        values = [o for p, o in facts if p.value == rule.on_property]
        before = len(draft.insert)
        _CHECKS[rule.kind](draft, rule, node, values, new)
        if len(draft.insert) != before:
            facts = draft.facts(node)


def _ancestors(ir: OntologyIR, cls: str) -> tuple[str, ...]:
    return ir.classes[cls].ancestors if cls in ir.classes else ()


def _fits(draft: Draft, value: Any, filler: str | None, union: tuple[str, ...] = ()) -> bool:
    """Whether one value is of the filler class or datatype (no filler: anything), or of one
    member of a union filler."""
    if union:
        return any(str(value.value) == member or _fits(draft, value, member)
                   for member in union)
    if filler is None or filler in UNIVERSAL_FILLERS:
        return True
    if isinstance(value, Literal):
        return filler.startswith(XSD) and (value.datatype.value == filler or filler in (
            XSD + "string", RDFS_LITERAL)) or filler == RDFS_LITERAL
    if filler.startswith(XSD):
        return False
    return isinstance(value, NamedNode) and draft.admitted(value.value, (filler,))


def _name(draft: Draft, iri: str | None, union: tuple[str, ...] = ()) -> str:
    """Prefixed name, with the label when the local name is an identifier."""
    if union:
        return " or ".join(_name(draft, m) for m in union)
    if not iri:
        return "anything"
    info = draft.ir.classes.get(iri)
    curie = draft.ir.curie(iri)
    return f"{curie} ({info.label})" if info and is_opaque(info.name) else curie


def _some(draft: Draft, rule: Restriction, node: str, values: list[Any], new: bool) -> None:
    wanted = _name(draft, rule.filler, rule.fillers)
    if values and not any(_fits(draft, v, rule.filler, rule.fillers) for v in values):
        draft.fail("type_mismatch", draft.field_of(node, rule.on_property),
                   [str(v.value) for v in values],
                   f"needs at least one value of {wanted} (someValuesFrom, {rule.source})",
                   allowed=_entities(draft, rule))
    elif not values and new and satisfiable(draft.ir, rule.filler) and not any(
            f.code == "required_missing" for f in draft.findings):
        # a sub-class's own axiom (its tool's arguments are those of the main class)
        draft.require("required_missing", draft.field_of(node, rule.on_property), None,
                      f"a {_name(draft, rule.on_class)} needs a value of "
                      f"{_name(draft, rule.filler)} here (someValuesFrom, {rule.source})",
                      allowed=_entities(draft, rule),
                      hint="give it when the paper states it, or link one later with `link`")


def _all(draft: Draft, rule: Restriction, node: str, values: list[Any], new: bool) -> None:
    wrong = [v for v in values if not _fits(draft, v, rule.filler, rule.fillers)]
    if wrong:
        wanted = _name(draft, rule.filler, rule.fillers)
        listed = rule.fillers and not any(m in draft.ir.classes for m in rule.fillers)
        code = ("datatype" if (rule.filler or "").startswith(XSD)
                else "enum_value" if listed else "type_mismatch")
        draft.fail(code, draft.field_of(node, rule.on_property), [str(v.value) for v in wrong],
                   f"every value must be a {wanted} (allValuesFrom, {rule.source})",
                   allowed=_entities(draft, rule))


def _has_value(draft: Draft, rule: Restriction, node: str, values: list[Any], new: bool) -> None:
    wanted = rule.filler or ""
    if any(str(v.value) == wanted for v in values):
        return
    if values:
        draft.fail("enum_value", draft.field_of(node, rule.on_property),
                   [str(v.value) for v in values], f"a {_name(draft, rule.on_class)} has the "
                   f"value {_name(draft, wanted)} here (hasValue, {rule.source})",
                   allowed=(wanted if prop_kind(draft, rule) == "datatype"
                            else draft.ir.curie(wanted),))
    elif new:  # the axiom states the value: write it
        prop = draft.ir.properties[rule.on_property]
        draft.add(node, rule.on_property,
                  Literal(wanted) if prop.kind == "datatype" else NamedNode(wanted))


def prop_kind(draft: Draft, rule: Restriction) -> str:
    info = draft.ir.properties.get(rule.on_property)
    return info.kind if info else "object"


def _entities(draft: Draft, rule: Restriction) -> tuple[str, ...]:
    """Values the call could give instead: entities of this paper (IRIs) or named individuals
    (prefixed names) of the filler class or union; nothing for a datatype filler (the message
    names it)."""
    fillers = rule.fillers or ((rule.filler,) if rule.filler else ())
    classes = tuple(f for f in fillers if f in draft.ir.classes)
    if not classes:  # individuals or literals of a oneOf
        return tuple(draft.ir.curie(f) if f in draft.ir.individuals else f
                     for f in fillers if not f.startswith(XSD))
    named = [draft.ir.curie(i.iri) for i in draft.ir.individuals.values()
             if any(draft.ir.is_a(t, c) for t in i.types for c in classes)]
    return (*draft.candidates(classes)[:MAX_ENTITIES], *named[:MAX_ENTITIES])


def _count(draft: Draft, rule: Restriction, node: str, values: list[Any], new: bool) -> None:
    n = rule.cardinality or 0
    have = sum(1 for v in values if _fits(draft, v, rule.filler))
    what = f"{n} value(s)" + (f" of {_name(draft, rule.filler)}" if rule.filler else "")
    if rule.kind in ("max", "exact") and have > n:
        draft.fail("cardinality", draft.field_of(node, rule.on_property), have,
                   f"a {_name(draft, rule.on_class)} takes at most {what} "
                   f"({rule.kind} cardinality, {rule.source})" + (
                       "; this property does not apply to it" if n == 0 else ""),
                   allowed=(n,))
    if (rule.kind in ("min", "exact") and new and have < n
            and satisfiable(draft.ir, rule.filler)
            and not any(f.code == "required_missing" for f in draft.findings)):
        draft.require("cardinality", draft.field_of(node, rule.on_property), have,
                      f"a {_name(draft, rule.on_class)} needs at least {what} "
                      f"({rule.kind} cardinality, {rule.source})", allowed=(n,))


def _inverse(draft: Draft, rule: Restriction, node: str, subjects: Sequence[str]) -> None:
    """`rule` is stated on the inverse of its property: the subjects linking to `node`."""
    values = [NamedNode(s) for s in subjects]
    if rule.kind == "all":
        _all(draft, rule, node, values, False)
    elif rule.kind in ("max", "exact"):
        _count(draft, rule.model_copy(update={"kind": "max"}), node, values, False)


_CHECKS = {"some": _some, "all": _all, "has_value": _has_value, "min": _count,
           "max": _count, "exact": _count}
