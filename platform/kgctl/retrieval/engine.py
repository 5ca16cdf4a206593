"""The retrieval tools: exploration of the graph and step-by-step query construction.

Every construction step builds a new draft, renders it, parses it back with pyoxigraph, dry-runs
it on the store (LIMIT 1, or a COUNT for an ungrouped aggregate) and commits it only when that
succeeds and is non-empty; otherwise :class:`Rejected` carries the feedback and the container
keeps its previous draft. Values enter the model as RDF terms only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from kgctl.errors import KgctlError
from kgctl.ontology.ir import OntologyIR
from kgctl.retrieval.containers import ContainerRegistry
from kgctl.retrieval.feedback import (
    ClassDescription,
    ClassList,
    ClassSummary,
    EntityDescription,
    EntityMatches,
    Option,
    PropertySummary,
    QueryAnswer,
    QueryView,
    Statement,
    TemplateList,
    reject,
)
from kgctl.retrieval.labels import LabelIndex
from kgctl.retrieval.model import (
    AGGREGATES,
    RDF_TYPE,
    Aggregate,
    BinOp,
    Call,
    Const,
    Element,
    Filter,
    Group,
    Having,
    Iri,
    Minus,
    Optional,
    OrderKey,
    Path,
    SelectQuery,
    Triple,
    Values,
    Var,
    prune,
)
from kgctl.retrieval.schema import NUMERIC_TYPES, RDFS_LABEL, XSD, Schema, SchemaPath, snake
from kgctl.retrieval.stats import StoreStats
from kgctl.retrieval.templates import Template, load_templates, type_patterns
from kgctl.retrieval.units import conversion, convertible_units, to_base
from kgctl.store.base import GraphStore

DEFAULT_ROWS = 100
MAX_ROWS = 10_000
RELATIVE_TOLERANCE = 1e-9  # unit conversion round-off on range bounds
MATCH_MODES = ("exact", "contains", "regex")
TEXT_CAP = 200  # characters of a comment shown in summaries
_PARSER = ox.Store()  # empty: parses queries back without touching data


class Draft(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    template: str
    query: SelectQuery
    variables: dict[str, str]

    def sparql(self) -> str:
        return prune(self.query).to_sparql()


class QueryEngine:
    """Tool implementations over one store and one IR. `session` keys the containers."""

    def __init__(self, store: GraphStore, ir: OntologyIR, *,
                 registry: ContainerRegistry[Draft] | None = None):
        self.store = store
        self.ir = ir
        self.stats = StoreStats.collect(store)
        self.schema = Schema(ir, property_counts=self.stats.property_counts)
        self.templates: dict[str, Template] = load_templates(self.schema)
        self.labels = LabelIndex.build(store, self.schema)
        self.registry: ContainerRegistry[Draft] = registry or ContainerRegistry()
        self.prefixes = tuple(sorted(ir.prefixes.items()))
        self.dry_run_ms: list[float] = []

    # ---------------------------------------------------------------- exploration ----------
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

    # ---------------------------------------------------------------- construction ---------
    def new_query(self, session: str, template: str) -> QueryView:
        found = self.templates.get(template.strip())
        if found is None:
            raise reject("unknown_template", f"no template {template!r}", field="template",
                         value=template, allowed=tuple(self.list_templates().templates),
                         hint="pick one of the allowed templates")
        draft = Draft(template=found.name, variables=dict(found.variables), query=SelectQuery(
            prefixes=self.prefixes, select=tuple(Var(name=v) for v in found.select),
            where=found.where))
        ms = self._dry_run(draft, None)
        container = self.registry.create(session, draft)
        return self._view(container.id, draft, f"new query from template {found.name}", ms)

    def filter_by_entity(self, session: str, query_id: str, variable: str,
                         entities: Sequence[str]) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        if not entities:
            raise reject("empty_value", "give at least one entity IRI", field="entities",
                         value=list(entities), sparql=draft.sparql())
        rows = []
        for iri in entities:
            node = self._entity_node(iri, sparql=draft.sparql())
            types = {s["t"].value
                     for s in self._select("SELECT ?e ?t WHERE { ?e a ?t }", {"e": node})}
            want = draft.variables[var]
            if want in self.ir.classes and not any(self.schema.compatible(t, want) for t in types):
                raise reject("type_mismatch", f"{iri} is not a {self.ir.curie(want)}",
                             field="entities", value=iri,
                             allowed=tuple(sorted(self.ir.curie(t) for t in types)),
                             hint="filter a variable of the entity's class, or find_entities "
                                  f"with class_name={self.ir.curie(want)}",
                             sparql=draft.sparql())
            rows.append((Const.node(iri),))
        values = Values(variables_=(Var(name=var),), rows=tuple(rows))
        return self._commit(session, query_id, draft, _add(draft, values),
                            f"?{var} restricted to {len(rows)} entity IRI(s)")

    def filter_by_value(self, session: str, query_id: str, variable: str,
                        value: str | float | bool, *, property: str | None = None,
                        match: str = "exact", op: str = "=",
                        ignore_case: bool = True) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        if isinstance(value, str) and not value.strip():
            raise reject("empty_filter", "the value is empty", field="value", value=value,
                         hint="give a non-empty value", sparql=draft.sparql())
        if property is None:  # test the variable's own value
            datatype = draft.variables[var]
            if datatype in self.ir.classes:
                raise reject("not_a_value", f"?{var} is a node; give the property to test",
                             field="property", sparql=draft.sparql(),
                             allowed=tuple(sorted(self.ir.curie(p.iri) for p in
                                                  self.ir.properties_of(datatype))))
            test = self._value_test(draft, var, datatype, value, match=match, op=op,
                                    ignore_case=ignore_case)
            return self._commit(session, query_id, draft, _add(draft, Filter(expr=test)),
                                f"filter on ?{var}")
        prop = self._property(property, draft, var)
        items: list[Element] = []
        if prop == RDFS_LABEL or self.ir.properties[prop].kind != "object":
            datatype = XSD + "string" if prop == RDFS_LABEL else self.schema.datatype_of(
                self.ir.properties[prop])
            target, new = _object_var(draft, var, prop, snake(prop).removeprefix("has_"))
        else:  # an object property: compare the label of the node it points to
            node, new_node = _object_var(draft, var, prop, snake(prop).removeprefix("has_"))
            target, new_label = _object_var(draft, node, RDFS_LABEL, f"{node}_label")
            datatype = XSD + "string"
            if new_node:
                items.append(_triple(var, prop, node))
            new = new_label
            var = node
            prop = RDFS_LABEL
        if new:
            items.append(_triple(var, prop, target))
        items.append(Filter(expr=self._value_test(draft, target, datatype, value, match=match,
                                                  op=op, ignore_case=ignore_case)))
        variables = {target: datatype} if new else {}
        if var not in draft.variables:
            variables[var] = self._range_class(property)
        return self._commit(session, query_id, draft, _add(draft, *items, variables=variables),
                            f"filter on ?{target}")

    def filter_by_quantity(self, session: str, query_id: str, variable: str, property: str,
                           unit: str, *, minimum: float | None = None,
                           maximum: float | None = None) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        prop = self._property(property, draft, var)
        quantity = self.ir.quantity_of(prop)
        if quantity is None:
            quantity_props = [self.ir.curie(p.iri) for p in self.ir.properties.values()
                              if self.ir.quantity_of(p.iri) and self.schema.usable_from(
                                  draft.variables[var], p)]
            raise reject("not_a_quantity", f"{self.ir.curie(prop)} does not point to a quantity",
                         field="property", value=property, allowed=tuple(quantity_props),
                         sparql=draft.sparql())
        unit_iri = self.ir.resolve_unit(unit, quantity.iri) or (
            self.ir.resolve_unit(unit) if conversion(self.ir.resolve_unit(unit) or "") else None)
        if unit_iri is None or conversion(unit_iri) is None or not any(
                conversion(u) and conversion(u)[0] == conversion(unit_iri)[0]
                for u in quantity.units):
            raise reject("unknown_unit", f"unit {unit!r} does not measure {quantity.label}",
                         field="unit", value=unit,
                         allowed=tuple(self.ir.curie(u) for u in quantity.units if conversion(u)),
                         sparql=draft.sparql())
        if minimum is None and maximum is None:
            raise reject("empty_filter", "give minimum and/or maximum", field="minimum",
                         sparql=draft.sparql())
        if minimum is not None and maximum is not None and minimum > maximum:
            raise reject("empty_filter", "minimum is above maximum", field="minimum",
                         value=[minimum, maximum], sparql=draft.sparql())
        q, new = _object_var(draft, var, prop, snake(prop).removeprefix("has_"))
        value, unit_var, factor, offset = (f"{q}_value", f"{q}_unit", f"{q}_factor", f"{q}_offset")
        items: list[Element] = [_triple(var, prop, q)] if new else []
        if not _has_triple(draft, q, quantity.value_property):
            items.append(_triple(q, quantity.value_property, value))
        if not _has_triple(draft, q, quantity.unit_property):
            items.append(_triple(q, quantity.unit_property, unit_var))
        value = _object_of(draft, q, quantity.value_property) or value
        unit_var = _object_of(draft, q, quantity.unit_property) or unit_var
        if not any(isinstance(i, Values) and Var(name=factor) in i.variables_
                   for i in draft.query.where.items):
            table = tuple((Iri(value=u), Const.number(conversion(u)[1]),
                           Const.number(conversion(u)[2])) for u in convertible_units(unit_iri))
            items.append(Values(variables_=(Var(name=unit_var), Var(name=factor),
                                            Var(name=offset)), rows=table))
        base = BinOp(op="+", left=BinOp(op="*", left=Var(name=value), right=Var(name=factor)),
                     right=Var(name=offset))
        for bound, op in ((minimum, ">="), (maximum, "<=")):
            if bound is not None:
                edge = to_base(float(bound), unit_iri)
                slack = abs(edge) * RELATIVE_TOLERANCE * (-1 if op == ">=" else 1)
                items.append(Filter(expr=BinOp(op=op, left=base,
                                               right=Const.number(edge + slack))))
        variables = {value: XSD + "double", unit_var: quantity.unit_category}
        if new:
            variables[q] = quantity.iri
        span = f"{'' if minimum is None else minimum}..{'' if maximum is None else maximum}"
        return self._commit(session, query_id, draft, _add(draft, *items, variables=variables),
                            f"?{q} in {span} {self.ir.curie(unit_iri)} (any convertible unit)")

    def add_path_constraint(self, session: str, query_id: str, variable: str,
                            target_class: str, *, option: int | None = None,
                            target_variable: str | None = None) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        start = draft.variables[var]
        goal = self._class(target_class, "target_class", sparql=draft.sparql())
        if target_variable is not None:
            self._var(draft, target_variable, query_id)
        if start not in self.ir.classes:
            raise reject("not_a_node", f"?{var} holds a value, not a node of a class",
                         field="variable", value=variable, sparql=draft.sparql())
        paths = self.schema.paths(start, goal)
        options = tuple(Option(rank=i, value=p.describe(self.ir), score=p.cost,
                               label=f"{len(p.hops)} hops, {p.support} instances")
                        for i, p in enumerate(paths))
        if not paths:
            raise reject("no_path", f"no schema path from {self.ir.curie(start)} to "
                         f"{self.ir.curie(goal)}", field="target_class", value=target_class,
                         hint="describe_class shows what this class connects to",
                         retryable=False, sparql=draft.sparql())
        tied = [p for p in paths if p.cost == paths[0].cost]
        if option is None and len(tied) > 1:
            raise reject("ambiguous_path", f"{len(tied)} equally short paths; choose one",
                         field="option", options=options,
                         hint="call again with option=<rank>", sparql=draft.sparql())
        if option is not None and not 0 <= option < len(paths):
            raise reject("unknown_option", f"option {option} out of range", field="option",
                         value=option, options=options, sparql=draft.sparql())
        chosen = paths[option or 0]
        items, variables, end = self._path_items(draft, var, chosen, goal, target_variable)
        select = draft.query.select if target_variable else (*draft.query.select, Var(name=end))
        new = _add(draft, *items, variables=variables)
        new = new.model_copy(update={"query": new.query.model_copy(update={"select": select})})
        return self._commit(session, query_id, draft, new,
                            f"?{var} {chosen.describe(self.ir)} ?{end}")

    def add_triple(self, session: str, query_id: str, subject: str, property: str, *,
                   object: str | None = None, mode: str = "required",
                   inverse: bool = False) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, subject, query_id)
        if mode not in ("required", "optional", "exclude"):
            raise reject("invalid_value", f"unknown mode {mode!r}", field="mode", value=mode,
                         allowed=("required", "optional", "exclude"), sparql=draft.sparql())
        prop = self._property(property, draft, var, inverse=inverse)
        info = self.ir.properties.get(prop)
        obj_class = (self._domain_class(info) if inverse else self._range_class(property))
        name = object or _fresh(draft, snake(prop).removeprefix("has_"))
        Var(name=name) if _valid_name(name) else self._bad_name(draft, name)
        if object and object in draft.variables:
            have = draft.variables[object]
            ok = (self.schema.compatible(have, obj_class) if obj_class in self.ir.classes
                  and have in self.ir.classes else (have in self.ir.classes) == (
                      obj_class in self.ir.classes))
            if not ok:
                raise reject("range_mismatch", f"?{object} is {self.ir.curie(have)}, "
                             f"{self.ir.curie(prop)} needs {self.ir.curie(obj_class)}",
                             field="object", value=object, sparql=draft.sparql())
        s, o = (name, var) if inverse else (var, name)
        triple = _triple(s, prop, o)
        element: Element = {"required": triple,
                            "optional": Optional(group=Group(items=(triple,))),
                            "exclude": Minus(group=Group(items=(triple,)))}[mode]
        variables = {} if mode == "exclude" or name in draft.variables else {name: obj_class}
        new = _add(draft, element, variables=variables)
        if variables and mode != "exclude":
            new = _with(new, select=(*draft.query.select, Var(name=name)))
        return self._commit(session, query_id, draft, new,
                            f"{mode} ?{s} {self.ir.curie(prop)} ?{o}")

    def group_by(self, session: str, query_id: str, variables: Sequence[str]) -> QueryView:
        draft = self._draft(session, query_id)
        keys = tuple(Var(name=self._var(draft, v, query_id)) for v in variables)
        if not keys:
            raise reject("empty_value", "give at least one variable", field="variables",
                         sparql=draft.sparql())
        select = tuple(v for v in draft.query.select if v in keys)
        return self._commit(session, query_id, draft, _with(draft, group_by=keys, select=select),
                            "grouped by " + ", ".join(f"?{k.name}" for k in keys))

    def aggregate(self, session: str, query_id: str, function: str, *,
                  variable: str | None = None, distinct: bool = False, alias: str | None = None,
                  having_op: str | None = None, having_value: float | None = None) -> QueryView:
        draft = self._draft(session, query_id)
        fn = function.strip().upper()
        if fn not in AGGREGATES:
            raise reject("invalid_aggregate", f"unknown aggregate {function!r}", field="function",
                         value=function, allowed=AGGREGATES, sparql=draft.sparql())
        var = self._var(draft, variable, query_id) if variable else None
        if var is None and fn != "COUNT":
            raise reject("invalid_aggregate", f"{fn} needs a variable", field="variable",
                         sparql=draft.sparql())
        if fn in ("SUM", "AVG") and draft.variables.get(var) not in NUMERIC_TYPES:
            raise reject("not_numeric", f"?{var} is not numeric", field="variable", value=var,
                         allowed=tuple(v for v, t in draft.variables.items() if t in NUMERIC_TYPES),
                         sparql=draft.sparql())
        name = alias or _fresh(draft, f"{fn.lower()}_{var or 'rows'}")
        if not _valid_name(name) or name in draft.variables:
            self._bad_name(draft, name)
        agg = Aggregate(function=fn, var=Var(name=var) if var else None, distinct=distinct,
                        alias=Var(name=name), separator=", " if fn == "GROUP_CONCAT" else None)
        update: dict = {"aggregates": (*draft.query.aggregates, agg)}
        if having_op is not None:
            if having_value is None:
                raise reject("empty_filter", "having_op needs having_value",
                             field="having_value", sparql=draft.sparql())
            try:
                cond = Having(aggregate=agg, op=having_op, value=Const.number(having_value))
            except ValueError:
                raise reject("invalid_value", f"unknown comparison {having_op!r}",
                             field="having_op", value=having_op, allowed=("=", "!=", "<", "<=",
                                                                          ">", ">="),
                             sparql=draft.sparql()) from None
            update["having"] = (*draft.query.having, cond)
        new = _with(draft, **update)
        new = new.model_copy(update={"variables": {**draft.variables, name: _agg_type(fn)}})
        return self._commit(session, query_id, draft, new, f"?{name} = {fn}")

    def select(self, session: str, query_id: str, variables: Sequence[str], *,
               distinct: bool = True) -> QueryView:
        draft = self._draft(session, query_id)
        names = [self._var(draft, v, query_id) for v in variables]
        aliases = {a.alias.name for a in draft.query.aggregates}
        return self._commit(session, query_id, draft, _with(
            draft, select=tuple(Var(name=n) for n in names if n not in aliases),
            aggregates=tuple(a for a in draft.query.aggregates if a.alias.name in names)
            if any(n in aliases for n in names) else draft.query.aggregates,
            distinct=distinct), "projection " + " ".join(f"?{n}" for n in names))

    def order_by(self, session: str, query_id: str, variable: str, *, descending: bool = False,
                 limit: int | None = None) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        if limit is not None and not 0 < limit <= MAX_ROWS:
            raise reject("invalid_value", f"limit must be 1..{MAX_ROWS}", field="limit",
                         value=limit, sparql=draft.sparql())
        keys = (*draft.query.order_by, OrderKey(var=Var(name=var), descending=descending))
        return self._commit(session, query_id, draft,
                            _with(draft, order_by=keys, limit=limit or draft.query.limit),
                            f"ordered by ?{var}{' desc' if descending else ''}")

    def undo(self, session: str, query_id: str) -> QueryView:
        container = self._container(session, query_id)
        if not container.undo():
            raise reject("nothing_to_undo", "the container is at its template",
                         field="query_id", value=query_id, retryable=False,
                         sparql=container.current.sparql())
        return self._view(query_id, container.current, "undid the last step")

    def show_query(self, session: str, query_id: str) -> QueryView:
        container = self._container(session, query_id)
        return self._view(query_id, container.current, "unchanged")

    def execute_query(self, session: str, query_id: str, *,
                      limit: int = DEFAULT_ROWS) -> QueryAnswer:
        draft = self._draft(session, query_id)
        if not 0 < limit <= MAX_ROWS:
            raise reject("invalid_value", f"limit must be 1..{MAX_ROWS}", field="limit",
                         value=limit, sparql=draft.sparql())
        return self.run(draft, query_id=query_id, limit=limit)

    def run(self, draft: Draft, *, query_id: str = "", limit: int = MAX_ROWS) -> QueryAnswer:
        query = prune(draft.query)
        cap = min(limit, query.limit) if query.limit else limit
        text = query.to_sparql(limit=cap + 1)
        solutions = list(self._select(text))
        columns = tuple(query.columns())
        rows = tuple(tuple(_text(s[c]) for c in columns) for s in solutions[:cap])
        return QueryAnswer(query_id=query_id, sparql=query.to_sparql(), columns=columns,
                           rows=rows, truncated=len(solutions) > cap)

    # ---------------------------------------------------------------- internals -------------
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
        return QueryView(query_id=query_id, template=draft.template, sparql=draft.sparql(),
                         variables={v: self.ir.curie(c) for v, c in draft.variables.items()},
                         columns=tuple(prune(draft.query).columns()), change=change,
                         dry_run_ms=round(ms, 3))

    def _container(self, session: str, query_id: str):
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

    def _class(self, name: str, field: str, *, sparql: str = "") -> str:
        found = self.schema.cls(name)
        if found is None:
            raise reject("unknown_class", f"no class {name!r} in the ontology", field=field,
                         value=name, allowed=tuple(self.schema.near_names(name, kind="class")),
                         hint="list_classes shows the classes with instances", sparql=sparql)
        return found

    def _property(self, name: str, draft: Draft, var: str, *, inverse: bool = False) -> str:
        iri = self.schema.expand(name)
        cls = draft.variables[var]
        usable = [p for p in self.ir.properties.values() if cls in self.ir.classes and (
            self.schema.accepts_object(p, cls) and p.kind == "object" if inverse
            else self.schema.usable_from(cls, p) and p.domain)]
        if iri == RDFS_LABEL and not inverse and cls in self.ir.classes:
            return iri
        info = self.ir.properties.get(iri)
        if info is None and iri != RDFS_LABEL:
            raise reject("unknown_property", f"no property {name!r} in the ontology",
                         field="property", value=name,
                         allowed=tuple(self.schema.near_names(name, kind="property")),
                         sparql=draft.sparql())
        if cls not in self.ir.classes or info not in usable:
            raise reject("domain_mismatch", f"{self.ir.curie(iri)} does not apply to "
                         f"?{var} ({self.ir.curie(cls)})", field="property", value=name,
                         allowed=tuple(sorted(self.ir.curie(p.iri) for p in usable)),
                         hint="use one of the allowed properties or add_path_constraint",
                         sparql=draft.sparql())
        return iri

    def _range_class(self, name: str) -> str:
        iri = self.schema.expand(name)
        info = self.ir.properties.get(iri)
        if info is None or not info.range:
            return XSD + "string"
        return info.range[0]

    def _domain_class(self, info) -> str:
        return info.domain[0] if info and len(info.domain) == 1 else (
            _common_ancestor(self.ir, info.domain) if info else XSD + "string")

    def _entity_node(self, iri: str, *, sparql: str = "") -> ox.NamedNode:
        try:
            return ox.NamedNode(iri.strip().strip("<>"))
        except ValueError:
            raise reject("invalid_value", "not an IRI", field="iri", value=iri,
                         hint="use the iri of a find_entities candidate", sparql=sparql) from None

    def _bad_name(self, draft: Draft, name: str):
        raise reject("invalid_name", f"{name!r} is not a usable new variable name",
                     field="name", value=name, hint="letters, digits and _; not already used",
                     sparql=draft.sparql())

    def _value_test(self, draft: Draft, target: str, datatype: str, value, *, match: str,
                    op: str, ignore_case: bool):
        var = Var(name=target)
        if datatype == XSD + "boolean":
            if not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
                raise reject("invalid_value", f"{value!r} is not a boolean", field="value",
                             value=value, allowed=("true", "false"), sparql=draft.sparql())
            flag = value if isinstance(value, bool) else str(value).lower() == "true"
            return BinOp(op="=", left=var, right=Const.boolean(flag))
        if datatype in NUMERIC_TYPES:
            try:
                number = float(value)
                return BinOp(op=op, left=var, right=Const.number(number))
            except (TypeError, ValueError):
                raise reject("invalid_value", f"{value!r} is not a number or {op!r} not a "
                             "comparison", field="value", value=value,
                             allowed=("=", "!=", "<", "<=", ">", ">="),
                             sparql=draft.sparql()) from None
        if match not in MATCH_MODES:
            raise reject("invalid_value", f"unknown match mode {match!r}", field="match",
                         value=match, allowed=MATCH_MODES, sparql=draft.sparql())
        text = str(value)
        if match == "regex":
            try:
                re.compile(text)
            except re.error as exc:
                raise reject("malformed_regex", f"malformed regular expression: {exc}",
                             field="value", value=text, hint="escape special characters",
                             sparql=draft.sparql()) from None
            flags = "i" if ignore_case else ""
            return Call(name="REGEX", args=(Call(name="STR", args=(var,)), Const.string(text),
                                            Const.string(flags)))
        subject = Call(name="STR", args=(var,))
        if ignore_case:
            subject, text = Call(name="LCASE", args=(subject,)), text.lower()
        if match == "contains":
            return Call(name="CONTAINS", args=(subject, Const.string(text)))
        return BinOp(op="=", left=subject, right=Const.string(text))

    def _path_items(self, draft: Draft, var: str, path: SchemaPath, goal: str,
                    target_variable: str | None):
        items: list[Element] = []
        variables: dict[str, str] = {}
        at = var
        for i, hop in enumerate(path.hops):
            last = i == len(path.hops) - 1
            cls = self.schema.narrower(hop.to_class, goal) if last else hop.to_class
            nxt = target_variable if (last and target_variable) else _fresh(
                draft, snake(cls), taken=variables)
            s, o = (nxt, at) if hop.inverse else (at, nxt)
            items.append(_triple(s, hop.property, o))
            if nxt not in draft.variables:
                variables[nxt] = cls
            if last and cls != hop.to_class and not target_variable:
                items.extend(type_patterns(nxt, cls, self.schema))
            at = nxt
        return items, variables, at


# Pure helpers.


def _triple(s: str, prop: str, o: str) -> Triple:
    return Triple(s=Var(name=s), p=Path.of(prop), o=Var(name=o))


def _add(draft: Draft, *items: Element, variables: dict[str, str] | None = None) -> Draft:
    where = Group(items=(*draft.query.where.items, *items))
    return Draft(template=draft.template, query=draft.query.model_copy(update={"where": where}),
                 variables={**draft.variables, **(variables or {})})


def _with(draft: Draft, **update) -> Draft:
    return draft.model_copy(update={"query": draft.query.model_copy(update=update)})


def _walk(group: Group):
    for item in group.items:
        yield item
        if isinstance(item, Optional):
            yield from _walk(item.group)


def _object_of(draft: Draft, var: str, prop: str) -> str | None:
    """The variable already standing for `?var prop ?x` (required or optional), if any."""
    for item in _walk(draft.query.where):
        if (isinstance(item, Triple) and item.s == Var(name=var) and isinstance(item.o, Var)
                and len(item.p.steps) == 1 and item.p.steps[0].iri == prop
                and not item.p.steps[0].inverse):
            return item.o.name
    return None


def _has_triple(draft: Draft, var: str, prop: str) -> bool:
    return _object_of(draft, var, prop) is not None


def _object_var(draft: Draft, var: str, prop: str, stem: str) -> tuple[str, bool]:
    """(variable for the object of ``?var prop``, whether it is new)."""
    found = _object_of(draft, var, prop)
    return (found, False) if found else (_fresh(draft, f"{var}_{stem}"), True)


def _fresh(draft: Draft, stem: str, *, taken: dict[str, str] | None = None) -> str:
    base = re.sub(r"\W+", "_", stem).strip("_") or "x"
    used = set(draft.variables) | set(taken or {}) | draft.query.where.variables()
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


def _valid_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name))


def _agg_type(fn: str) -> str:
    return XSD + ("integer" if fn == "COUNT" else "string" if fn == "GROUP_CONCAT" else "double")


def _common_ancestor(ir: OntologyIR, classes: Sequence[str]) -> str:
    first = ir.classes.get(classes[0]) if classes else None
    for candidate in (first.iri, *first.ancestors) if first else ():
        if all(ir.is_a(c, candidate) for c in classes):
            return candidate
    return classes[0] if classes else XSD + "string"


def _text(term) -> str | None:
    return None if term is None else term.value


def _key(pair) -> tuple[str, str]:
    return pair[0], str(pair[1])


def _statement(ir: OntologyIR, prop: str, term) -> Statement:
    return Statement(property=ir.curie(prop), value=term.value,
                     kind="iri" if isinstance(term, ox.NamedNode) else "literal")
