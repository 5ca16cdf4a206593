"""Exploration tools: templates, classes with instance counts, entity lookup and description."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox

from kgctl.ontology.ir import OntologyIR
from kgctl.retrieval.core import EngineCore
from kgctl.retrieval.feedback import (
    ClassDescription,
    ClassList,
    ClassSummary,
    EntityDescription,
    EntityMatches,
    PropertySummary,
    Statement,
    TemplateList,
    reject,
)
from kgctl.retrieval.mining import UNTYPED
from kgctl.retrieval.terms import RDF_TYPE

TEXT_CAP = 200  # characters of a comment shown in summaries


class ExplorationTools(EngineCore):
    def list_templates(self) -> TemplateList:
        self.refresh()
        return TemplateList(templates={n: t.description for n, t in sorted(self.templates.items())
                                       if self.stats.instances(t.variables[t.root], self.schema)
                                       or t.variables[t.root] not in self.ir.classes},
                            skipped=self.skipped_templates)

    def list_classes(self, *, include_empty: bool = False) -> ClassList:
        self.refresh()
        rows = []
        for iri, info in self.ir.classes.items():
            n = self.stats.instances(iri, self.schema)
            if n or include_empty:
                rows.append(ClassSummary(iri=iri, curie=self.ir.curie(iri), label=info.label,
                                         instances=n, comment=info.comment[:TEXT_CAP]))
        return ClassList(classes=tuple(rows))

    def describe_class(self, class_name: str) -> ClassDescription:
        self.refresh()
        cls = self._class(class_name, "class_name")
        info = self.ir.classes[cls]
        below = set(self.schema.type_constraint(cls))
        out: dict[str, Counter[str]] = {}
        inc: dict[str, Counter[str]] = {}
        for e in self.schema.mined.edges:  # what the data links instances of `cls` with
            if e.subject in below:
                out.setdefault(e.property, Counter())[e.object] += e.count
            if not e.literal and e.object in below:
                inc.setdefault(e.property, Counter())[e.subject] += e.count
        for prop in self.ir.properties.values():  # what the T-Box allows besides
            if prop.domain and any(self.schema.compatible(cls, d) for d in prop.domain):
                out.setdefault(prop.iri, Counter())
            if prop.kind == "object" and any(self.schema.compatible(cls, r) for r in prop.range):
                inc.setdefault(prop.iri, Counter())
        props = []
        for direction, table in (("out", out), ("in", inc)):
            for iri, ends in table.items():
                info = self.ir.properties.get(iri)
                declared = (info.range if direction == "out" else info.domain) if info else ()
                quantity = self.ir.quantity_of(iri) if direction == "out" else None
                props.append(PropertySummary(
                    curie=self.ir.curie(iri), kind=_kind(info, ends, self.ir),
                    direction=direction,
                    other_end=tuple(self.ir.curie(c) for c in (
                        [c for c, _ in ends.most_common() if c != UNTYPED] or declared)),
                    instances=sum(ends.values()),
                    quantity_units=tuple(self.ir.curie(u) for u in quantity.units)
                    if quantity else ()))
        props.sort(key=lambda p: (-p.instances, p.direction, p.curie))
        return ClassDescription(
            curie=self.ir.curie(cls), label=info.label, comment=info.comment[:TEXT_CAP * 2],
            instances=self.stats.instances(cls, self.schema),
            parents=tuple(self.ir.curie(p) for p in info.parents),
            subclasses=tuple(self.ir.curie(c) for c in self.ir.subclasses(cls) if c != cls),
            properties=tuple(props),
            templates=tuple(n for n, t in sorted(self.templates.items())
                            if t.variables.get(t.root) == cls))

    def find_entities(self, label: str, *, class_name: str | None = None,
                      k: int = 5) -> EntityMatches:
        self.refresh()
        cls = self._class(class_name, "class_name") if class_name else None
        if not label.strip():
            raise reject("empty_value", "give a label to search for", field="label", value=label)
        found = self.labels.search(label, cls=cls, k=k)
        return EntityMatches(query=label, candidates=tuple(found.options),
                             ambiguous=found.ambiguous, no_match=not found.options,
                             label_properties=tuple(self.ir.curie(p)
                                                    for p in self.schema.label_properties()))

    def describe_entity(self, iri: str) -> EntityDescription:
        node = self._entity_node(iri)
        out = [(s["p"].value, s["o"]) for s in self._select(
            "SELECT ?s ?p ?o WHERE { ?s ?p ?o }", {"s": node})]
        inc = [(s["p"].value, s["x"]) for s in self._select(
            "SELECT ?s ?x ?p WHERE { ?x ?p ?s }", {"s": node})]
        if not out and not inc:
            raise reject("unknown_entity", "no such entity in the graph", field="iri", value=iri,
                         hint="use find_entities to look an entity up by its label")
        classes = sorted({o.value for p, o in out if p == RDF_TYPE})
        names = set(self.schema.label_properties())
        labels = sorted({o.value for p, o in out if p in names and isinstance(o, ox.Literal)})
        return EntityDescription(
            iri=iri, classes=tuple(self.ir.curie(c) for c in classes), labels=tuple(labels),
            outgoing=tuple(_statement(self.ir, p, o) for p, o in sorted(out, key=_key)
                           if p != RDF_TYPE),
            incoming=tuple(_statement(self.ir, p, o) for p, o in sorted(inc, key=_key)))


def _kind(info, ends: Counter[str], ir: OntologyIR) -> str:
    """The kind the data shows (literal values or nodes), else the declared one."""
    if ends:
        return "object" if any(c in ir.classes or c == UNTYPED for c in ends) else "datatype"
    return info.kind if info else "object"


def _key(pair) -> tuple[str, str]:
    return pair[0], str(pair[1])


def _statement(ir: OntologyIR, prop: str, term) -> Statement:
    return Statement(property=ir.curie(prop), value=term.value,
                     kind="iri" if isinstance(term, ox.NamedNode) else "literal")
