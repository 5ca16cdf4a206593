"""State and checks shared by the retrieval tools: the store, the schema view, the containers,
name resolution with feedback, and the commit rule (parse back, dry-run, non-empty).

The engine is built from a store, the IR of its T-Box and a folder of template files (or None):
what the data shows (the mined schema graph, class counts, label predicates) is read from the
store and read again when the store has changed (checked at most every ``REFRESH_SECONDS``, at
the exploration tools and ``new_query``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pyoxigraph as ox

from kgctl.errors import KgctlError
from kgctl.ontology.ir import OntologyIR, PropertyInfo
from kgctl.retrieval.containers import Container, ContainerRegistry
from kgctl.retrieval.drafts import Draft, common_ancestor, valid_name
from kgctl.retrieval.feedback import QueryView, reject
from kgctl.retrieval.labels import LabelIndex
from kgctl.retrieval.mining import Mined, merge
from kgctl.retrieval.prune import prune
from kgctl.retrieval.schema import RDFS_LABEL, XSD, Schema
from kgctl.retrieval.stats import StoreStats, fingerprint
from kgctl.retrieval.templates import Template, load_templates
from kgctl.store.base import GraphStore
from kgctl.store.views import DEFAULT_VIEW, InView

_PARSER = ox.Store()  # empty: parses queries back without touching data
REFRESH_SECONDS = 10.0  # a changed store is seen within this (a count per graph)
NODE = "http://www.w3.org/2000/01/rdf-schema#Resource"  # a node of no known class


class EngineCore:
    """One store, the IR of its T-Box and a template folder; `session` keys the containers."""

    def __init__(self, store: GraphStore, ir: OntologyIR, *,
                 templates: Path | None = None, prefixes: dict[str, str] | None = None,
                 registry: ContainerRegistry[Draft] | None = None,
                 view: str = DEFAULT_VIEW):
        self.store = InView(store, view)  # merged: entities with their canonical identity
        self.tbox = ir
        self.prefix_hints = dict(prefixes or {})  # names for namespaces only the data uses
        self.template_folder = templates
        self.registry: ContainerRegistry[Draft] = registry or ContainerRegistry()
        self.dry_run_ms: list[float] = []
        self.refresh_seconds = REFRESH_SECONDS
        self._read_data()

    def _read_data(self) -> None:
        """Mine the schema graph, count classes, index labels and load the templates."""
        self._state = fingerprint(self.store)
        self._checked = time.monotonic()
        self.stats = StoreStats.collect(self.store)
        mined = Mined.read(self.store)
        self.ir = merge(self.tbox, mined, hints=self.prefix_hints)
        self.schema = Schema(self.ir, mined=mined)
        self.templates: dict[str, Template]
        self.templates, self.skipped_templates = load_templates(self.schema,
                                                                folder=self.template_folder)
        self.labels = LabelIndex.build(self.store, self.schema)
        self.prefixes = tuple(sorted(self.ir.prefixes.items()))

    def refresh(self) -> None:
        """Read the data again when the store has changed since it was read."""
        if time.monotonic() - self._checked < self.refresh_seconds:
            return
        self._checked = time.monotonic()
        if fingerprint(self.store) != self._state:
            self._read_data()

    # -- the commit rule ----------------------------------------------------------------------
    def _commit(self, session: str, query_id: str, old: Draft, new: Draft,
                change: str) -> QueryView:
        ms = self._dry_run(new, old)
        self._container(session, query_id).push(new)
        return self._view(query_id, new, change, ms)

    def _dry_run(self, draft: Draft, old: Draft | None) -> float:
        current = old.sparql() if old else ""
        query = prune(draft.query)
        text, counts = query.dry_run_sparql()
        start = time.perf_counter()
        try:
            _PARSER.query(query.to_sparql())
            solutions = list(self._select(text))
        except SyntaxError as exc:
            raise reject("invalid_query", f"the step would make invalid SPARQL: {exc}",
                         retryable=False, sparql=current) from None
        except (KgctlError, OSError, ValueError) as exc:
            raise reject("store_error", f"dry run failed: {exc}", sparql=current) from None
        ms = (time.perf_counter() - start) * 1000
        self.dry_run_ms.append(ms)
        empty = not solutions or (counts and int(solutions[0]["n"].value) == 0)
        if empty:
            raise reject("empty_result", "the step would make the query return nothing",
                         hint="check the value with find_entities/describe_entity, widen the "
                              "filter, or undo an earlier step", sparql=current)
        return ms

    def _select(self, text: str, bindings: dict[str, ox.NamedNode] | None = None):
        return self.store.query(text, bindings=bindings, union=True)

    def _view(self, query_id: str, draft: Draft, change: str, ms: float = 0.0) -> QueryView:
        template = self.templates.get(draft.template)
        return QueryView(query_id=query_id, template=draft.template, sparql=draft.sparql(),
                         variables={v: self.ir.curie(c) for v, c in draft.variables.items()},
                         columns=tuple(prune(draft.query).columns()), change=change,
                         requires=template.requires if template else (),
                         optional_form=template.optional_form if template else "",
                         dry_run_ms=round(ms, 3))

    # -- containers and names -----------------------------------------------------------------
    def _container(self, session: str, query_id: str) -> Container[Draft]:
        container = self.registry.get(session, query_id)
        if container is None:
            raise reject("unknown_query", f"no query container {query_id!r} in this session",
                         field="query_id", value=query_id,
                         allowed=tuple(self.registry.ids(session)),
                         hint="start one with new_query (containers expire when idle)")
        return container

    def _draft(self, session: str, query_id: str) -> Draft:
        return self._container(session, query_id).current

    def _var(self, draft: Draft, name: str, query_id: str) -> str:
        text = name.strip().lstrip("?$")
        if text not in draft.variables:
            raise reject("unknown_variable", f"no variable ?{text} in {query_id}",
                         field="variable", value=name, allowed=tuple(sorted(draft.variables)),
                         sparql=draft.sparql())
        return text

    def _node_var(self, draft: Draft, name: str, query_id: str) -> str:
        """A variable that stands for nodes of a class (not literal values)."""
        var = self._var(draft, name, query_id)
        if draft.variables[var] not in self.ir.classes:
            raise reject("not_a_node", f"?{var} holds a value, not a node of a class",
                         field="variable", value=name,
                         allowed=tuple(sorted(v for v, c in draft.variables.items()
                                              if c in self.ir.classes)),
                         sparql=draft.sparql())
        return var

    def _class(self, name: str, field: str, *, sparql: str = "") -> str:
        found = self.schema.cls(name)
        if found is None:
            raise reject("unknown_class", f"no class {name!r} in the ontology", field=field,
                         value=name, allowed=tuple(self.schema.near_names(name, kind="class")),
                         hint="list_classes shows the classes with instances", sparql=sparql)
        return found

    def _property(self, name: str, draft: Draft, var: str, *, inverse: bool = False) -> str:
        """The IRI of a property that applies to ?var: from it (its domain admits the class, or
        the data uses it from the class), or to it when `inverse` (its range admits it)."""
        iri = self.schema.expand(name)
        cls = draft.variables[var]
        if iri == RDFS_LABEL and not inverse and cls in self.ir.classes:
            return iri
        info = self.ir.properties.get(iri)
        if info is None:
            raise reject("unknown_property", f"no property {name!r} in the ontology",
                         field="property", value=name,
                         allowed=tuple(self.schema.near_names(name, kind="property")),
                         sparql=draft.sparql())
        if cls == NODE and (info.kind == "object" or not inverse):  # no class to check
            return iri
        if cls not in self.ir.classes or not self._applies(info, cls, inverse=inverse):
            allowed = [p for p in self.ir.properties.values() if cls in self.ir.classes
                       and (p.domain or inverse) and self._applies(p, cls, inverse=inverse)]
            raise reject("domain_mismatch", f"{self.ir.curie(iri)} does not apply to "
                         f"?{var} ({self.ir.curie(cls)})", field="property", value=name,
                         allowed=tuple(sorted(self.ir.curie(p.iri) for p in allowed)),
                         hint="use one of the allowed properties or add_path_constraint",
                         sparql=draft.sparql())
        return iri

    def _applies(self, info: PropertyInfo, cls: str, *, inverse: bool) -> bool:
        if inverse:
            return info.kind == "object" and self.schema.accepts_object(info, cls)
        return self.schema.usable_from(cls, info)

    def _range_class(self, name: str, subject: str = "") -> str:
        """What `?s name ?o` binds ?o to: the range class, or the datatype of the values (the
        T-Box's, else the data's, also for an object property the data fills with literals)."""
        info = self.ir.properties.get(self.schema.expand(name))
        if info is None:
            return XSD + "string"
        if self.schema.holds_literals(info):
            return self.schema.datatype_of(info, self.schema.type_constraint(subject))
        classes = self.schema.end_classes(info, inverse=False)
        return classes[0] if classes else NODE

    def _domain_class(self, info: PropertyInfo | None) -> str:
        return info.domain[0] if info and len(info.domain) == 1 else (
            common_ancestor(self.ir, info.domain) if info else XSD + "string")

    def _entity_node(self, iri: str, *, sparql: str = "") -> ox.NamedNode:
        try:
            return ox.NamedNode(iri.strip().strip("<>"))
        except ValueError:
            raise reject("invalid_value", "not an IRI", field="iri", value=iri,
                         hint="use the iri of a find_entities candidate", sparql=sparql) from None

    def _name(self, draft: Draft, name: str, *, new: bool = True) -> str:
        """`name` when it is a valid (and, if `new`, unused) variable name, else a rejection."""
        if not valid_name(name) or (new and name in draft.variables):
            raise reject("invalid_name", f"{name!r} is not a usable new variable name",
                         field="name", value=name,
                         hint="letters, digits and _; not already used", sparql=draft.sparql())
        return name
