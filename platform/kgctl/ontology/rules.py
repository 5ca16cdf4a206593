"""Merge OWL axioms and profile rules: class flags, cardinalities, enumerations, orderings.

Cardinalities are induced down the class hierarchy: the rule for (class, property) combines
the rules stated on the class and on all its ancestors (highest minimum, lowest maximum). A
minimum above a maximum is a compile error naming the two sources that disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kgctl.errors import OntologyError
from kgctl.ontology.graph import OWL, RDFS
from kgctl.ontology.ir import (
    RDFS_LABEL,
    Cardinality,
    ClassInfo,
    Enumeration,
    OntologyIR,
    OrderingRule,
    PropertyInfo,
    Restriction,
    Source,
)
from kgctl.ontology.profile import CardinalityRule, Profile

BUILTIN_PROPERTIES = (RDFS_LABEL,)  # profiles may constrain these without a T-Box declaring them
UNIVERSAL_FILLERS = (OWL + "Thing", RDFS + "Literal")
_KIND_OF_BOUNDS = {(1, 1): "exact", (1, None): "min", (0, 1): "max"}

Curie = Callable[[str], str]


@dataclass(frozen=True)
class Bound:
    min: int | None
    max: int | None
    source: Source


def with_ancestors(classes: dict[str, ClassInfo]) -> dict[str, ClassInfo]:
    """Fill `ancestors`: all named super-classes, nearest first, ties by IRI (cycle-safe)."""
    out = {}
    for iri, info in classes.items():
        seen: list[str] = []
        frontier = list(info.parents)
        while frontier:
            following: list[str] = []
            for parent in sorted(set(frontier)):
                if parent != iri and parent not in seen:
                    seen.append(parent)
                    following.extend(classes[parent].parents if parent in classes else ())
            frontier = following
        out[iri] = info.model_copy(update={"ancestors": tuple(seen)})
    return out


def check_names(
    profile: Profile,
    classes: dict[str, ClassInfo],
    properties: dict[str, PropertyInfo],
    curie: Curie,
) -> None:
    """Everything a profile names must exist in the loaded T-Boxes (error with the YAML line)."""

    def need_class(iri: str, source: Source) -> None:
        if iri not in classes:
            raise OntologyError(f"{source}: unknown class {curie(iri)}")

    def need_property(iri: str, source: Source, kind: str | None = None) -> None:
        if iri in BUILTIN_PROPERTIES:
            return
        if iri not in properties:
            raise OntologyError(f"{source}: unknown property {curie(iri)}")
        if kind and properties[iri].kind != kind:
            raise OntologyError(f"{source}: {curie(iri)} must be a {kind} property")

    def need_applicable(cls: str, prop: str, source: Source) -> None:
        domain = properties[prop].domain if prop in properties else ()
        lineage = {cls, *classes[cls].ancestors}
        below = {c for c, info in classes.items() if cls in info.ancestors}
        if domain and not lineage.intersection(domain) and not below.intersection(domain):
            raise OntologyError(
                f"{source}: {curie(prop)} does not apply to {curie(cls)} "
                f"(its domain is {', '.join(map(curie, domain))})"
            )

    for named in profile.top_level:
        need_class(named.iri, named.source)
    for flag in profile.flags:
        need_class(flag.iri, flag.source)
        if flag.key is not None and flag.key_source is not None:
            need_property(flag.key, flag.key_source, "datatype")
            need_applicable(flag.iri, flag.key, flag.key_source)
    for rule in (*profile.cardinalities, *profile.values):
        need_class(rule.on_class, rule.source)
        need_property(rule.on_property, rule.source)
        need_applicable(rule.on_class, rule.on_property, rule.source)
    for order in profile.orderings:
        need_class(order.container, order.source)
        need_property(order.member, order.source, "object")
        need_property(order.order, order.source, "datatype")
    for quantity in profile.quantities:
        need_class(quantity.quantity, quantity.source)
        need_class(quantity.unit_category, quantity.source)
        need_property(quantity.value_property, quantity.source, "datatype")
        need_property(quantity.unit_property, quantity.source, "object")


def apply_flags(
    classes: dict[str, ClassInfo], profiles: Sequence[Profile], curie: Curie
) -> dict[str, ClassInfo]:
    """Set `abstract`, `standalone`, `identity`, `key` and `verify` from the profiles; two
    profiles disagreeing is an error."""
    out = dict(classes)
    said: dict[tuple[str, str], tuple[object, Source]] = {}
    for profile in profiles:
        for flag in profile.flags:
            update = {
                k: v
                for k, v in (("abstract", flag.abstract), ("standalone", flag.standalone),
                             ("identity", flag.identity), ("key", flag.key),
                             ("verify", flag.verify))
                if v is not None
            }
            for name, value in update.items():
                earlier = said.setdefault((flag.iri, name), (value, flag.source))
                if earlier[0] != value:
                    raise OntologyError(
                        f"{flag.source}: {name} of {curie(flag.iri)} is {value}, "
                        f"but {earlier[1]} says {earlier[0]}"
                    )
            if flag.key is not None:
                update["key_source"] = flag.key_source
            out[flag.iri] = out[flag.iri].model_copy(update=update)
    return out


def profile_restrictions(rules: Iterable[CardinalityRule]) -> list[Restriction]:
    """Profile cardinality rules in the shape of OWL restrictions (each keeps its line)."""
    return [
        Restriction(
            on_class=r.on_class,
            on_property=r.on_property,
            kind=_KIND_OF_BOUNDS[(r.min, r.max)],
            cardinality=r.max if r.max is not None else r.min,
            source=r.source,
        )
        for r in rules
    ]


def merge_cardinalities(
    classes: dict[str, ClassInfo],
    properties: dict[str, PropertyInfo],
    restrictions: Sequence[Restriction],
    curie: Curie,
    *,
    hard_owl: bool = False,
) -> tuple[Cardinality, ...]:
    """One merged Cardinality per (class, property) that any rule on the class or an ancestor
    touches; raises OntologyError when a minimum exceeds a maximum. A minimum only OWL axioms
    state is `soft` unless `hard_owl`."""
    stated: dict[tuple[str, str], list[Bound]] = {}
    for rule in restrictions:
        bound = _bound(rule, properties.get(rule.on_property))
        if bound:
            stated.setdefault((rule.on_class, rule.on_property), []).append(bound)
    for prop in properties.values():
        if prop.functional:
            for cls in prop.domain:
                stated.setdefault((cls, prop.iri), []).append(
                    Bound(None, 1, Source(kind="owl", file=prop.ontology))
                )
    by_class: dict[str, set[str]] = {}
    for cls, prop in stated:
        by_class.setdefault(cls, set()).add(prop)
    merged = []
    summaries: dict[tuple[int, ...], _Summary] = {}  # the same inherited bounds merge once
    for cls in sorted(classes):
        lineage = (cls, *classes[cls].ancestors)
        for prop in sorted({p for owner in lineage for p in by_class.get(owner, ())}):
            bounds = [b for owner in lineage for b in stated.get((owner, prop), ())]
            key = tuple(map(id, bounds))
            if key not in summaries:
                summaries[key] = _summarise(bounds, hard_owl=hard_owl)
            low, high, sources, soft = summaries[key]
            if low and high and low.min > high.max:
                raise OntologyError(
                    f"cardinality conflict on {curie(cls)} {curie(prop)}: {low.source} requires "
                    f"at least {low.min} but {high.source} allows at most {high.max}")
            merged.append(Cardinality(on_class=cls, on_property=prop,
                                      min=low.min if low else 0, max=high.max if high else None,
                                      sources=sources, soft=soft))
    return tuple(merged)


def check_keys(ir: OntologyIR) -> None:
    """A natural key must hold one value per instance (max-one), or it identifies nothing."""
    for cls, info in ir.classes.items():
        if info.key is not None and ir.cardinality(cls, info.key).max != 1:
            raise OntologyError(
                f"{info.key_source}: key {ir.curie(info.key)} of {ir.curie(cls)} must be "
                f"max-one (add it to max_one)"
            )


def merge_enumerations(
    owl_enums: Sequence[Enumeration],
    profiles: Sequence[Profile],
    classes: dict[str, ClassInfo],
    properties: dict[str, PropertyInfo],
    curie: Curie,
) -> tuple[Enumeration, ...]:
    """OWL enumerations plus profile allowed values; a profile may narrow an OWL list, never
    widen it. Values of an object property are IRIs (CURIEs in the profile)."""
    chosen = {(e.on_class, e.on_property): e for e in owl_enums}
    for profile in profiles:
        for written in profile.values:
            rule = written
            if rule.on_property in properties and properties[rule.on_property].kind == "object":
                if rule.iris is None:
                    raise OntologyError(
                        f"{rule.source}: values of object property {curie(rule.on_property)} "
                        "must be IRIs or CURIEs"
                    )
                rule = rule.model_copy(update={"values": rule.iris})
            lineage = (rule.on_class, *classes[rule.on_class].ancestors, None)
            for owner in lineage:
                axiom = chosen.get((owner, rule.on_property))
                if axiom is None:
                    continue
                extra = sorted(set(rule.values) - set(axiom.values))
                if extra:
                    raise OntologyError(
                        f"allowed values conflict on {curie(rule.on_class)} "
                        f"{curie(rule.on_property)}: {rule.source} allows {', '.join(extra)} "
                        f"which {axiom.source} does not (allowed: {', '.join(axiom.values)})"
                    )
            chosen[(rule.on_class, rule.on_property)] = Enumeration(
                on_class=rule.on_class,
                on_property=rule.on_property,
                values=rule.values,
                source=rule.source,
            )
    return tuple(chosen[k] for k in sorted(chosen, key=lambda k: (k[0] or "", k[1])))


def orderings(profiles: Sequence[Profile]) -> tuple[OrderingRule, ...]:
    rules = [
        OrderingRule(
            container_class=o.container,
            member_property=o.member,
            order_property=o.order,
            start=o.start,
            contiguous=o.contiguous,
            source=o.source,
        )
        for p in profiles
        for o in p.orderings
    ]
    return tuple(
        sorted(rules, key=lambda r: (r.container_class, r.member_property, r.order_property))
    )


def restriction_key(rule: Restriction) -> tuple:
    """Deterministic order of restrictions."""
    return (
        rule.on_class,
        rule.on_property,
        rule.kind,
        rule.cardinality or 0,
        rule.filler or "",
        rule.source.kind,
        rule.source.file,
        rule.source.line or 0,
    )


def _bound(rule: Restriction, prop: PropertyInfo | None) -> Bound | None:
    if rule.kind == "some" and not rule.inverse:  # someValuesFrom: at least one value
        return Bound(1, None, rule.source)
    if rule.kind not in ("min", "max", "exact") or rule.cardinality is None or rule.inverse:
        return None
    # a qualified maximum only bounds all values when its filler covers the whole range
    covers = (
        rule.filler is None
        or rule.filler in UNIVERSAL_FILLERS
        or (prop is not None and rule.filler in prop.range)
    )
    low = rule.cardinality if rule.kind in ("min", "exact") else None
    high = rule.cardinality if rule.kind in ("max", "exact") and covers else None
    return Bound(low, high, rule.source) if low is not None or high is not None else None


_Summary = tuple[Bound | None, Bound | None, tuple[Source, ...], bool]


def _summarise(bounds: Sequence[Bound], *, hard_owl: bool) -> _Summary:
    """(highest minimum, lowest maximum, sources, soft) of the bounds on one (class,
    property); soft: a positive minimum only OWL axioms state, unless `hard_owl`."""
    lows = [b for b in bounds if b.min is not None]
    highs = [b for b in bounds if b.max is not None]
    low = max(lows, key=lambda b: b.min) if lows else None
    high = min(highs, key=lambda b: b.max) if highs else None
    sources = sorted({b.source for b in bounds}, key=lambda s: (s.kind, s.file, s.line or 0))
    soft = (not hard_owl and low is not None and low.min > 0
            and all(b.source.kind == "owl" for b in bounds if b.min))
    return low, high, tuple(sources), soft
