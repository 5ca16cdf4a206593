"""Exploration tools: templates, classes with instance counts, entity lookup and description."""

from __future__ import annotations

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
from kgctl.retrieval.schema import RDFS_LABEL
from kgctl.retrieval.terms import RDF_TYPE

TEXT_CAP = 200  # characters of a comment shown in summaries


class ExplorationTools(EngineCore):
    def list_templates(self) -> TemplateList:
        return TemplateList(templates={n: t.description for n, t in sorted(self.templates.items())
                                       if t.source != "ir" or self.stats.instances(
                                           t.variables[t.root], self.schema)})

    def list_classes(self, *, include_empty: bool = False) -> ClassList:
        rows = []
        for iri, info in self.ir.classes.items():
            n = self.stats.instances(iri, self.schema)
            if n or include_empty:
                rows.append(ClassSummary(iri=iri, curie=self.ir.curie(iri), label=info.label,
                                         instances=n, comment=info.comment[:TEXT_CAP]))
        return ClassList(classes=tuple(rows))

    def describe_class(self, class_name: str) -> ClassDescription:
        cls = self._class(class_name, "class_name")
        info = self.ir.classes[cls]
        out_counts, in_counts = self.stats.class_property_counts(self.store, self.schema, cls)
        props = []
        for prop in self.ir.properties.values():
            if prop.domain and any(self.schema.compatible(cls, d) for d in prop.domain):
                quantity = self.ir.quantity_of(prop.iri)
                props.append(PropertySummary(
                    curie=self.ir.curie(prop.iri), kind=prop.kind, direction="out",
                    other_end=tuple(self.ir.curie(r) for r in prop.range),
                    instances=out_counts.get(prop.iri, 0),
                    quantity_units=tuple(self.ir.curie(u) for u in quantity.units) if quantity
                    else ()))
            if prop.kind == "object" and any(self.schema.compatible(cls, r) for r in prop.range):
                props.append(PropertySummary(
                    curie=self.ir.curie(prop.iri), kind=prop.kind, direction="in",
                    other_end=tuple(self.ir.curie(d) for d in prop.domain),
                    instances=in_counts.get(prop.iri, 0)))
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
        cls = self._class(class_name, "class_name") if class_name else None
        if not label.strip():
            raise reject("empty_value", "give a label to search for", field="label", value=label)
        found = self.labels.search(label, cls=cls, k=k)
        return EntityMatches(query=label, candidates=tuple(found.options),
                             ambiguous=found.ambiguous)

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
        labels = sorted({o.value for p, o in out if p == RDFS_LABEL})
        return EntityDescription(
            iri=iri, classes=tuple(self.ir.curie(c) for c in classes), labels=tuple(labels),
            outgoing=tuple(_statement(self.ir, p, o) for p, o in sorted(out, key=_key)
                           if p != RDF_TYPE),
            incoming=tuple(_statement(self.ir, p, o) for p, o in sorted(inc, key=_key)))


def _key(pair) -> tuple[str, str]:
    return pair[0], str(pair[1])


def _statement(ir: OntologyIR, prop: str, term) -> Statement:
    return Statement(property=ir.curie(prop), value=term.value,
                     kind="iri" if isinstance(term, ox.NamedNode) else "literal")
