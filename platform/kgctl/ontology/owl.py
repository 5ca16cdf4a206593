"""OWL axioms of the merged T-Boxes -> classes, properties, restrictions, enumerations.

Only named classes become ClassInfo; class expressions (owl:unionOf, restrictions, owl:oneOf)
are expanded into the fields that use them. Classes that are referenced but declared in no
loaded T-Box become `external` entries so every IRI the IR mentions resolves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph as ox

from kgctl.ontology.annotations import (
    DOMAIN_INCLUDES,
    RANGE_INCLUDES,
    description_of,
    is_deprecated,
    label_of,
    local_name,
)
from kgctl.ontology.datatypes import is_datatype_expr, literal_types, restricted_datatype
from kgctl.ontology.graph import OWL, RDF, RDFS, XSD, Key, TBoxGraph, is_blank
from kgctl.ontology.ir import (
    ClassInfo,
    Enumeration,
    Individual,
    PropertyInfo,
    Restriction,
    Source,
)

CLASS_TYPES = (OWL + "Class", RDFS + "Class")
PROPERTY_KINDS = {
    OWL + "ObjectProperty": "object",
    OWL + "DatatypeProperty": "datatype",
    OWL + "AnnotationProperty": "annotation",
}
BUILTIN_NAMESPACES = (RDF, RDFS, OWL, XSD)
LITERAL_RANGES = (RDFS + "Literal", RDF + "langString", RDF + "PlainLiteral")
# restriction predicate -> (kind, is a cardinality)
_CARDINALITY = {
    OWL + "minCardinality": "min",
    OWL + "minQualifiedCardinality": "min",
    OWL + "maxCardinality": "max",
    OWL + "maxQualifiedCardinality": "max",
    OWL + "cardinality": "exact",
    OWL + "qualifiedCardinality": "exact",
}
_FILLER = {
    OWL + "someValuesFrom": "some",
    OWL + "allValuesFrom": "all",
    OWL + "hasValue": "has_value",
}
_QUALIFIER = (OWL + "onClass", OWL + "onDataRange")


@dataclass
class OwlModel:
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    properties: dict[str, PropertyInfo] = field(default_factory=dict)
    restrictions: list[Restriction] = field(default_factory=list)
    enumerations: list[Enumeration] = field(default_factory=list)
    individuals: dict[str, Individual] = field(default_factory=dict)


def read_owl(graph: TBoxGraph) -> OwlModel:
    """The pipeline: declared classes, properties, restrictions, then referenced externals."""
    model = OwlModel()
    groups = _disjoint_groups(graph)
    model.classes = {iri: _class(graph, iri, groups) for iri in _declared_classes(graph)}
    model.properties = _inherit_signatures(
        {iri: _property(graph, iri) for iri in _declared_properties(graph)}
    )
    model.restrictions = _restrictions(graph, model.classes)
    model.enumerations = _enumerations(graph, model)
    for cls, info in model.classes.items():
        members = _defined_by_one_of(graph, cls)
        if members:
            model.classes[cls] = info.model_copy(update={"one_of": members})
    _add_externals(model)
    model.individuals = _individuals(graph, model.classes)
    return model


def is_builtin(iri: str) -> bool:
    return iri.startswith(BUILTIN_NAMESPACES)


def named_members(graph: TBoxGraph, expr: Key) -> list[str]:
    """Named classes a class expression stands for: an IRI, or owl:unionOf expanded."""
    if not is_blank(expr):
        return [expr]
    members: list[str] = []
    for head in graph.object_keys(expr, OWL + "unionOf"):
        for item in graph.rdf_list(head):
            if not isinstance(item, ox.Literal):
                members.extend(named_members(graph, _key(item)))
    return sorted(set(members))


def _key(term: ox.NamedNode | ox.BlankNode) -> Key:
    return term.value if isinstance(term, ox.NamedNode) else f"_:{term.value}"


def _declared_classes(graph: TBoxGraph) -> list[str]:
    return [
        k for k in graph.subjects_of_type(*CLASS_TYPES) if not is_blank(k) and not is_builtin(k)
    ]


def _declared_properties(graph: TBoxGraph) -> list[str]:
    typed = graph.subjects_of_type(*PROPERTY_KINDS, RDF + "Property")
    return [k for k in typed if not is_blank(k) and not is_builtin(k)]


def _disjoint_groups(graph: TBoxGraph) -> list[set[str]]:
    """The named members of each owl:AllDisjointClasses (read once, not per class)."""
    return [{m for head in graph.object_keys(group, OWL + "members")
             for m in (_key(t) for t in graph.rdf_list(head)) if not is_blank(m)}
            for group in graph.subjects_of_type(OWL + "AllDisjointClasses")]


def _class(graph: TBoxGraph, iri: str, groups: list[set[str]]) -> ClassInfo:
    # a defined class (owl:equivalentClass [ owl:intersectionOf (B ...) ]) is a sub-class of B
    defined = [m for e in graph.object_keys(iri, OWL + "equivalentClass") if is_blank(e)
               for head in graph.object_keys(e, OWL + "intersectionOf")
               for m in (_key(t) for t in graph.rdf_list(head) if not isinstance(t, ox.Literal))
               if not is_blank(m)]
    parents = [p for p in dict.fromkeys([*graph.named(iri, RDFS + "subClassOf"), *defined])
               if p != iri and not is_builtin(p)]
    disjoint = set(graph.named(iri, OWL + "disjointWith"))
    disjoint.update(graph.subjects_with(OWL + "disjointWith", iri))
    for members in groups:
        if iri in members:
            disjoint |= members - {iri}
    return ClassInfo(
        iri=iri,
        name=local_name(iri),
        label=label_of(graph, iri),
        comment=description_of(graph, iri),
        parents=tuple(parents),
        disjoint_with=tuple(sorted(disjoint)),
        ontology=graph.declared_in(iri, CLASS_TYPES),
        deprecated=is_deprecated(graph, iri),
    )


def _property(graph: TBoxGraph, iri: str) -> PropertyInfo:
    types = graph.types(iri)
    domains = graph.object_keys(iri, RDFS + "domain") or [
        d for p in DOMAIN_INCLUDES for d in graph.object_keys(iri, p)]
    domain = sorted({c for d in domains for c in named_members(graph, d)})
    ranges = graph.object_keys(iri, RDFS + "range") or [
        r for p in RANGE_INCLUDES for r in graph.object_keys(iri, p)]
    facets: dict[str, str] = {}
    for r in list(ranges):
        base = restricted_datatype(graph, r, facets)
        if base:
            ranges[ranges.index(r)] = base
    rng = sorted(
        {c for r in ranges for c in named_members(graph, r) if not is_datatype_expr(graph, c)}
        | {t for r in ranges for t in literal_types(graph, r)}
    )
    inverse = graph.named(iri, OWL + "inverseOf") or graph.subjects_with(OWL + "inverseOf", iri)
    return PropertyInfo(
        iri=iri,
        name=local_name(iri),
        label=label_of(graph, iri),
        comment=description_of(graph, iri),
        kind=_property_kind(types, rng),
        domain=tuple(domain),
        range=tuple(rng),
        inverse_of=sorted(inverse)[0] if inverse else None,
        functional=OWL + "FunctionalProperty" in types,
        parents=tuple(p for p in graph.named(iri, RDFS + "subPropertyOf") if p != iri),
        ontology=graph.declared_in(iri, (*PROPERTY_KINDS, RDF + "Property")),
        deprecated=is_deprecated(graph, iri),
        facets=dict(sorted(facets.items())),
    )


def _property_kind(types: set[str], rng: list[str]) -> str:
    for owl_type, kind in PROPERTY_KINDS.items():
        if owl_type in types:
            return kind
    literal = rng and all(r.startswith(XSD) or r in LITERAL_RANGES for r in rng)
    return "datatype" if literal else "object"


def _inherit_signatures(props: dict[str, PropertyInfo]) -> dict[str, PropertyInfo]:
    """Induced signatures: a property without its own domain/range takes the range/domain of
    its inverse, else its nearest parent's."""
    swapped = {"domain": "range", "range": "domain"}

    def inherited(iri: str, attr: str, seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
        prop = props.get(iri)
        if prop is None or iri in seen:
            return ()
        own = getattr(prop, attr)
        if own:
            return own
        inverse = props.get(prop.inverse_of or "")
        if inverse is not None and getattr(inverse, swapped[attr]):
            return getattr(inverse, swapped[attr])
        for parent in prop.parents:
            found = inherited(parent, attr, seen | {iri})
            if found:
                return found
        return ()

    return {
        iri: p.model_copy(
            update={"domain": inherited(iri, "domain"), "range": inherited(iri, "range")}
        )
        for iri, p in props.items()
    }


def _restrictions(graph: TBoxGraph, classes: dict[str, ClassInfo]) -> list[Restriction]:
    found: list[Restriction] = []
    for cls in classes:
        for expr in graph.object_keys(cls, RDFS + "subClassOf") + graph.object_keys(
            cls, OWL + "equivalentClass"
        ):
            for node in _conjuncts(graph, expr):
                found.extend(_restriction(graph, cls, node))
    return found


def _conjuncts(graph: TBoxGraph, expr: Key) -> list[Key]:
    """A blank class expression and, for owl:intersectionOf, each of its parts."""
    if not is_blank(expr):
        return []
    parts = [expr]
    for head in graph.object_keys(expr, OWL + "intersectionOf"):
        parts.extend(_key(t) for t in graph.rdf_list(head) if not isinstance(t, ox.Literal))
    return [p for p in parts if is_blank(p)]


def _restriction(graph: TBoxGraph, cls: str, node: Key) -> list[Restriction]:
    on_property = graph.named(node, OWL + "onProperty")
    inverse = False
    for expr in (e for e in graph.object_keys(node, OWL + "onProperty") if is_blank(e)):
        # onProperty [ owl:inverseOf q ]: the named inverse of q when one is declared
        for inner in graph.named(expr, OWL + "inverseOf"):
            named = [p for p in graph.named(inner, OWL + "inverseOf")
                     + graph.subjects_with(OWL + "inverseOf", inner) if not is_blank(p)]
            on_property, inverse = ([named[0]], False) if named else ([inner], True)
    if not on_property:
        return []
    source = Source(kind="owl", file=graph.file_of(node))
    qualifier = next((q for p in _QUALIFIER for q in graph.named(node, p)), None)
    rules: list[Restriction] = []
    for predicate, kind in _CARDINALITY.items():
        for value in graph.literals(node, predicate):
            rules.append(
                Restriction(
                    on_class=cls,
                    on_property=on_property[0],
                    kind=kind,
                    cardinality=int(value.value),
                    filler=qualifier,
                    inverse=inverse,
                    source=source,
                )
            )
    for predicate, kind in _FILLER.items():
        for value in graph.objects(node, predicate):
            blank = isinstance(value, ox.BlankNode)
            filler = None if blank else value.value
            rules.append(
                Restriction(
                    on_class=cls,
                    on_property=on_property[0],
                    kind=kind,
                    filler=filler,
                    fillers=_filler_members(graph, _key(value)) if blank else (),
                    inverse=inverse,
                    source=source,
                )
            )
    return rules


def _defined_by_one_of(graph: TBoxGraph, cls: str) -> tuple[str, ...]:
    """The individuals of a class defined by owl:oneOf: directly, as an equivalent class, or
    as a part of an equivalent intersection (`DomainConcept and {America ... Italy}`)."""
    parts = [p for e in graph.object_keys(cls, OWL + "equivalentClass")
             for p in _conjuncts(graph, e)]
    return _one_of(graph, cls) or next((v for p in parts if (v := _one_of(graph, p))), ())


def _filler_members(graph: TBoxGraph, node: Key) -> tuple[str, ...]:
    """Named members of a blank filler: the classes of an owl:unionOf, or the individuals
    (values) of an owl:oneOf."""
    return tuple(named_members(graph, node)) or _one_of(graph, node)


def _enumerations(graph: TBoxGraph, model: OwlModel) -> list[Enumeration]:
    """owl:oneOf as a property range, as an allValuesFrom filler, or as a class definition."""
    enums: list[Enumeration] = []
    enumerated_classes = {
        cls: values for cls in model.classes if (values := _defined_by_one_of(graph, cls))
    }
    for iri in model.properties:
        for rng in graph.object_keys(iri, RDFS + "range"):
            values = _one_of(graph, rng) or _datatype_one_of(graph, rng)
            if not values and rng in enumerated_classes:
                values = enumerated_classes[rng]
            if values:
                source = Source(kind="owl", file=graph.file_of(rng if is_blank(rng) else iri))
                enums.append(Enumeration(on_property=iri, values=values, source=source))
    for cls in model.classes:
        for expr in graph.object_keys(cls, RDFS + "subClassOf") + graph.object_keys(
            cls, OWL + "equivalentClass"
        ):
            for node in _conjuncts(graph, expr):
                prop = graph.named(node, OWL + "onProperty")
                for filler in graph.object_keys(node, OWL + "allValuesFrom"):
                    values = _one_of(graph, filler) or _datatype_one_of(graph, filler)
                    if prop and values:
                        enums.append(
                            Enumeration(
                                on_class=cls,
                                on_property=prop[0],
                                values=values,
                                source=Source(kind="owl", file=graph.file_of(node)),
                            )
                        )
    return enums


def _one_of(graph: TBoxGraph, node: Key) -> tuple[str, ...]:
    return tuple(
        sorted(
            {
                t.value
                for head in graph.object_keys(node, OWL + "oneOf")
                for t in graph.rdf_list(head)
                if not isinstance(t, ox.BlankNode)
            }
        )
    )


def _datatype_one_of(graph: TBoxGraph, node: Key) -> tuple[str, ...]:
    """OWL 2 data range: [ a rdfs:Datatype ; owl:equivalentClass [ owl:oneOf (...) ] ]."""
    return next(
        (v for e in graph.object_keys(node, OWL + "equivalentClass") if (v := _one_of(graph, e))),
        (),
    )


def _individuals(graph: TBoxGraph, classes: dict[str, ClassInfo]) -> dict[str, Individual]:
    """Named individuals: typed owl:NamedIndividual or with a class of the T-Boxes."""
    found = {}
    members: dict[str, set[str]] = {}  # individual -> classes whose owl:oneOf lists it
    for cls in classes:
        for value in _defined_by_one_of(graph, cls):
            members.setdefault(value, set()).add(cls)
    candidates = set(graph.subjects_of_type(OWL + "NamedIndividual", *classes)) | set(members)
    for iri in sorted(candidates):
        if is_blank(iri) or iri in classes or is_builtin(iri):
            continue
        types = tuple(sorted({t for t in graph.types(iri) if t in classes}
                             | members.get(iri, set())))
        found[iri] = Individual(iri=iri, name=local_name(iri), label=label_of(graph, iri),
                                types=types)
    return found


def _add_externals(model: OwlModel) -> None:
    referenced: set[str] = set()
    for info in model.classes.values():
        referenced.update(info.parents, info.disjoint_with)
    for prop in model.properties.values():
        referenced.update(prop.domain)
        if prop.kind == "object":
            referenced.update(prop.range)
    for rule in model.restrictions:
        if rule.filler and rule.kind != "has_value" and not rule.filler.startswith(XSD):
            referenced.add(rule.filler)
    for iri in sorted(referenced - model.classes.keys()):
        if not is_builtin(iri):
            model.classes[iri] = ClassInfo(
                iri=iri, name=local_name(iri), label=local_name(iri), external=True
            )
