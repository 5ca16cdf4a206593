"""Filter tools: by entity, by value (with negation), by quantity range in any unit, and the
unit conversion of a quantity into a new variable (for aggregates, ordering and projection).

``op='!='`` is the complement of ``op='='``: on the variable's own value it keeps the rows whose
value differs or is unbound; with a property it keeps the entities that have *no* matching value
(``MINUS { ?v prop ?x FILTER(test) }``), so "linkers other than X" keeps linkers without a formula.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyoxigraph as ox

from kgctl.ontology.ir import QuantityKind
from kgctl.retrieval.comparisons import LEXICAL, comparable, iso_text, ordered
from kgctl.retrieval.core import EngineCore
from kgctl.retrieval.drafts import (
    Draft,
    add,
    fresh,
    object_of,
    object_var,
    required_variables,
    triple,
)
from kgctl.retrieval.feedback import QueryView, Rejected, reject
from kgctl.retrieval.model import Bind, Element, Filter, Group, Minus, Values
from kgctl.retrieval.schema import NUMERIC_TYPES, RDFS_LABEL, XSD, snake
from kgctl.retrieval.terms import CASTS, COMPARISONS, BinOp, Call, Const, Expr, Iri, Not, Var
from kgctl.retrieval.units import conversion, convertible_units, to_base, to_unit
from kgctl.store.entities import same_identity

RELATIVE_TOLERANCE = 1e-9  # unit conversion round-off on range bounds
MATCH_MODES = ("exact", "contains", "regex", "language")  # language: the value is a tag
EQUALITY = ("=", "!=")


class FilterTools(EngineCore):
    def filter_by_entity(self, session: str, query_id: str, variable: str,
                         entities: Sequence[str]) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        if not entities:
            raise reject("empty_value", "give at least one entity IRI", field="entities",
                         value=list(entities), sparql=draft.sparql())
        given = [self._entity_node(iri, sparql=draft.sparql()).value for iri in entities]
        # every entity with the same canonical identity (store.entities): one thing, any name
        nodes = [ox.NamedNode(iri) for iri in same_identity(self.store, given)]
        values = Values(variables_=(Var(name=var),),
                        rows=tuple((Const.node(n.value),) for n in nodes))
        try:
            return self._commit(session, query_id, draft, add(draft, values),
                                f"?{var} restricted to {len(nodes)} entity IRI(s)")
        except Rejected as rejected:
            # the data decides; when none of the rows has them, say why if the types tell
            if rejected.feedback.code == "empty_result":
                self._check_types(draft, var, nodes)
            raise

    def _check_types(self, draft: Draft, var: str, nodes: list) -> None:
        """type_mismatch for the first entity the T-Box types, all of whose types are declared
        and none fits the variable's class (untyped IRIs and vocabulary terms typed outside the
        T-Box, a skos:Concept, a unit, are never refused on their type)."""
        want = draft.variables[var]
        for node in nodes:
            types = {s["t"].value
                     for s in self._select("SELECT ?e ?t WHERE { ?e a ?t }", {"e": node})}
            known = types and all(t in self.ir.classes and not self.ir.classes[t].external
                                  for t in types)
            if (want in self.ir.classes and known
                    and not any(self.schema.compatible(t, want) for t in types)):
                raise reject("type_mismatch", f"{node.value} is not a {self.ir.curie(want)}",
                             field="entities", value=node.value,
                             allowed=tuple(sorted(self.ir.curie(t) for t in types)),
                             hint="filter a variable of the entity's class, or find_entities "
                                  f"with class_name={self.ir.curie(want)}",
                             sparql=draft.sparql())

    def filter_by_value(self, session: str, query_id: str, variable: str,
                        value: str | float | bool, *, property: str | None = None,
                        match: str = "exact", op: str = "=",
                        ignore_case: bool = True) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        if isinstance(value, str) and not value.strip():
            raise reject("empty_filter", "the value is empty", field="value", value=value,
                         hint="give a non-empty value", sparql=draft.sparql())
        if op not in COMPARISONS:
            raise reject("invalid_value", f"unknown comparison {op!r}", field="op", value=op,
                         allowed=COMPARISONS, sparql=draft.sparql())
        negate, test_op = op == "!=", "=" if op == "!=" else op
        if property is None:  # test the variable's own value
            datatype = draft.variables[var]
            if datatype in self.ir.classes:
                raise reject("not_a_value", f"?{var} is a node; give the property to test",
                             field="property", sparql=draft.sparql(),
                             allowed=tuple(sorted(self.ir.curie(p.iri) for p in
                                                  self.ir.properties_of(datatype))))
            test = self._value_test(draft, var, datatype, value, match=match, op=test_op,
                                    ignore_case=ignore_case)
            if negate:
                self._must_match(draft, add(draft, Filter(expr=test)), value)
                test = Not(expr=test)
                if var not in required_variables(draft):  # unbound differs from the value too
                    test = BinOp(op="||", left=Not(expr=Call(name="BOUND", args=(Var(name=var),))),
                                 right=test)
            note = cast_note(test.right if isinstance(test, BinOp) and test.op == "||" else
                             test.expr if isinstance(test, Not) else test)
            return self._commit(session, query_id, draft, add(draft, Filter(expr=test)),
                                f"filter on ?{var}{' (negated)' if negate else ''}{note}")
        prop = self._property(property, draft, var)
        items, target, datatype, variables = self._value_chain(draft, var, prop, property,
                                                               reuse=not negate)
        test = self._value_test(draft, target, datatype, value, match=match, op=test_op,
                                ignore_case=ignore_case,
                                lexical=prop != RDFS_LABEL and self.schema.mixed_temporal(prop))
        if negate:
            self._must_match(draft, add(draft, *items, Filter(expr=test), variables=variables),
                             value)
            block = Minus(group=Group(items=(*items, Filter(expr=test))))
            return self._commit(session, query_id, draft, add(draft, block),
                                f"?{var} has no {self.ir.curie(prop)} value matching {value!r}")
        return self._commit(session, query_id, draft,
                            add(draft, *items, Filter(expr=test), variables=variables),
                            f"filter on ?{target}{cast_note(test)}")

    def filter_by_quantity(self, session: str, query_id: str, variable: str, property: str,
                           unit: str, *, minimum: float | None = None,
                           maximum: float | None = None) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        prop, quantity, unit_iri = self._quantity(draft, var, property, unit)
        if minimum is None and maximum is None:
            raise reject("empty_filter", "give minimum and/or maximum", field="minimum",
                         sparql=draft.sparql())
        if minimum is not None and maximum is not None and minimum > maximum:
            raise reject("empty_filter", "minimum is above maximum", field="minimum",
                         value=[minimum, maximum], sparql=draft.sparql())
        items, q, value, unit_var, variables = _quantity_join(draft, var, prop, quantity)
        factor, offset = f"{q}_factor", f"{q}_offset"
        if not any(isinstance(i, Values) and Var(name=factor) in i.variables_
                   for i in draft.query.where.items):
            table = tuple((Iri(value=u), Const.number(conversion(u)[1]),
                           Const.number(conversion(u)[2])) for u in convertible_units(unit_iri))
            items.append(Values(variables_=(Var(name=unit_var), Var(name=factor),
                                            Var(name=offset)), rows=table))
        base = _linear(value, factor, offset)
        for bound, cmp in ((minimum, ">="), (maximum, "<=")):
            if bound is not None:
                edge = to_base(float(bound), unit_iri)
                slack = abs(edge) * RELATIVE_TOLERANCE * (-1 if cmp == ">=" else 1)
                items.append(Filter(expr=BinOp(op=cmp, left=base,
                                               right=Const.number(edge + slack))))
        span = f"{'' if minimum is None else minimum}..{'' if maximum is None else maximum}"
        return self._commit(session, query_id, draft, add(draft, *items, variables=variables),
                            f"?{q} in {span} {self.ir.curie(unit_iri)} (any convertible unit)")

    def convert_quantity(self, session: str, query_id: str, variable: str, property: str,
                         unit: str, *, name: str | None = None) -> QueryView:
        """Bind the quantity's value, converted from whatever unit it is stored in to `unit`,
        as a new numeric variable (selected; usable by aggregate, order_by, filter_by_value)."""
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        prop, quantity, unit_iri = self._quantity(draft, var, property, unit)
        items, q, value, unit_var, variables = _quantity_join(draft, var, prop, quantity)
        local = unit_iri.rsplit("/", 1)[-1]
        out = self._name(draft, name) if name else fresh(draft, f"{q}_{snake(local)}",
                                                         taken=variables)
        factor, offset = f"{out}_factor", f"{out}_offset"
        table = tuple((Iri(value=u), *(Const.number(x) for x in to_unit(u, unit_iri)))
                      for u in convertible_units(unit_iri))
        items += [Values(variables_=(Var(name=unit_var), Var(name=factor), Var(name=offset)),
                         rows=table),
                  Bind(expr=_linear(value, factor, offset), var=Var(name=out))]
        new = add(draft, *items, variables={**variables, out: XSD + "double"}, select=(out,))
        return self._commit(session, query_id, draft, new,
                            f"?{out} = ?{q} in {self.ir.curie(unit_iri)}")

    # -- helpers ------------------------------------------------------------------------------
    def _must_match(self, draft: Draft, positive: Draft, value) -> None:
        """Refuse a negation whose value no row has: excluding it would change nothing, which
        is most often a misspelt value."""
        try:
            self._dry_run(positive, draft)
        except Rejected as rejected:
            if rejected.feedback.code != "empty_result":
                raise
            raise reject("nothing_to_exclude", f"no row has the value {value!r}, so excluding "
                         "it would change nothing", field="value", value=value,
                         hint="check the spelling with find_entities or execute_query",
                         sparql=draft.sparql()) from None

    def _value_chain(self, draft: Draft, var: str, prop: str, property: str, *, reuse: bool
                     ) -> tuple[list[Element], str, str, dict[str, str]]:
        """Patterns from ?var to the literal a value filter tests: the property's own value, or
        the label of the node an object property points to. `reuse`: take the variables the
        draft already has for these hops (else fresh ones, for a MINUS block)."""
        def hop(subject: str, p: str, stem: str, taken: dict[str, str]) -> tuple[str, bool]:
            if reuse:
                return object_var(draft, subject, p, stem)
            return fresh(draft, f"{subject}_{stem}", taken=tuple(taken)), True

        items: list[Element] = []
        variables: dict[str, str] = {}
        stem = snake(prop).removeprefix("has_")
        if prop == RDFS_LABEL or self.schema.holds_literals(self.ir.properties[prop]):
            datatype = XSD + "string" if prop == RDFS_LABEL else self.schema.datatype_of(
                self.ir.properties[prop], self.schema.type_constraint(draft.variables[var]))
            target, new = hop(var, prop, stem, variables)
            if new:
                items.append(triple(var, prop, target))
                variables[target] = datatype
                if self.schema.mined.uses.get(prop, (0, 0, ()))[0]:  # nodes too: not compared
                    items.append(Filter(expr=Call(name="ISLITERAL", args=(Var(name=target),))))
            return items, target, datatype, variables
        node, new_node = hop(var, prop, stem, variables)
        if new_node:
            items.append(triple(var, prop, node))
            variables[node] = self._range_class(property)
        name = self.schema.label_property(draft.variables.get(node) or variables[node])
        target, new_label = hop(node, name, f"{node}_label", variables)
        if new_label:
            items.append(triple(node, name, target))
            variables[target] = XSD + "string"
        return items, target, XSD + "string", variables

    def _quantity(self, draft: Draft, var: str, property: str,
                  unit: str) -> tuple[str, QuantityKind, str]:
        """(property IRI, its quantity, unit IRI) after checking the unit measures it."""
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
        return prop, quantity, unit_iri

    def _value_test(self, draft: Draft, target: str, datatype: str, value, *, match: str,
                    op: str, ignore_case: bool, lexical: bool = False) -> Expr:
        """The FILTER expression; `lexical`: temporal values of several types, compared as ISO
        8601 text."""
        var = Var(name=target)
        if datatype == XSD + "boolean" or ordered(datatype):
            if match != "exact":
                raise reject("invalid_value", f"match={match!r} applies to text only",
                             field="match", value=match, allowed=("exact",),
                             sparql=draft.sparql())
        if datatype == XSD + "boolean":
            if op not in EQUALITY:
                raise _not_ordered(draft, op, "a boolean")
            if not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
                raise reject("invalid_value", f"{value!r} is not a boolean", field="value",
                             value=value, allowed=("true", "false"), sparql=draft.sparql())
            flag = value if isinstance(value, bool) else str(value).lower() == "true"
            return BinOp(op=op, left=var, right=Const.boolean(flag))
        if ordered(datatype) or (op not in EQUALITY and match == "exact"):
            typed = None if lexical else comparable(value, datatype)
            iso = iso_text(value, datatype)
            coarser = typed is None or (len(iso or "") < 19 and typed[0] == XSD + "dateTime")
            if op == "=" and iso is not None and coarser:
                # a day, month or year given for finer values: the values within it
                return Call(name="STRSTARTS", args=(Call(name="STR", args=(var,)),
                                                    Const.string(iso)))
            if (typed is None or lexical) and iso is not None:  # partial or mixed dates
                return BinOp(op=op, left=Call(name="STR", args=(var,)), right=Const.string(iso))
            if typed is None and not ordered(datatype):  # text that reads as no ordered type
                raise _not_ordered(draft, op, "text")
            if typed is None:
                raise reject("invalid_value", f"{value!r} cannot be compared with "
                             f"{self.ir.curie(datatype)} values", field="value", value=value,
                             hint="give a number, a date (2017-04-16), a date-time "
                                  "(2017-04-16T08:00:00) or a duration (P1DT2H)",
                             sparql=draft.sparql())
            kind, lexical = typed
            test = BinOp(op=op, left=var, right=Const(value=lexical, datatype=kind))
            if datatype == kind or (datatype in NUMERIC_TYPES and kind in NUMERIC_TYPES):
                return test
            return guarded_cast(var, kind, test)
        if op not in EQUALITY:
            raise _not_ordered(draft, op, "text")
        if match not in MATCH_MODES:
            raise reject("invalid_value", f"unknown match mode {match!r}", field="match",
                         value=match, allowed=MATCH_MODES, sparql=draft.sparql())
        text = str(value)
        if match == "language":  # "en" keeps en, en-GB, ...
            return Call(name="LANGMATCHES", args=(Call(name="LANG", args=(var,)),
                                                  Const.string(text.strip())))
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


def _not_ordered(draft: Draft, op: str, what: str):
    return reject("invalid_value", f"{op!r} does not apply to {what}", field="op", value=op,
                  allowed=EQUALITY, hint="ordering comparisons apply to numbers, dates, times "
                                         "and durations; use op='!=' to negate a text or "
                                         "boolean test", sparql=draft.sparql())


def guarded_cast(var: Var, kind: str, test: BinOp) -> Call:
    """``IF(REGEX(STR(?v), lexical form of kind), test-on-kind(?v), false)``: the cast is tried
    only on text that reads as `kind` (a failed cast is a row error in SPARQL but fails the whole
    query on some servers, which do not short-cut ``&&`` either)."""
    check = Call(name="REGEX", args=(Call(name="STR", args=(var,)), Const.string(LEXICAL[kind])))
    cast = test.model_copy(update={"left": Call(name=kind, args=(var,))})
    return Call(name="IF", args=(check, cast, Const.boolean(False)))


def cast_note(test: Expr) -> str:
    """' (values cast to xsd:T)' when a comparison casts the stored values, ' (compared as ISO
    8601 text)' when it compares their text, else ''."""
    if isinstance(test, Call) and test.name == "IF":
        test = test.args[1]
    if isinstance(test, BinOp) and isinstance(test.left, Call) and test.left.name in CASTS:
        return f" (values cast to xsd:{test.left.name.removeprefix(XSD)})"
    if (isinstance(test, BinOp) and test.op in ("<", "<=", ">", ">=")
            and isinstance(test.left, Call) and test.left.name == "STR"):
        return " (compared as ISO 8601 text)"
    return ""


def _quantity_join(draft: Draft, var: str, prop: str, quantity: QuantityKind
                   ) -> tuple[list[Element], str, str, str, dict[str, str]]:
    """(patterns, quantity var, value var, unit var, new variables) for ``?var prop ?q`` with
    its numerical value and unit, reusing what the draft already has."""
    q, new = object_var(draft, var, prop, snake(prop).removeprefix("has_"))
    items: list[Element] = [triple(var, prop, q)] if new else []
    value = object_of(draft, q, quantity.value_property) or f"{q}_value"
    unit_var = object_of(draft, q, quantity.unit_property) or f"{q}_unit"
    if not object_of(draft, q, quantity.value_property):
        items.append(triple(q, quantity.value_property, value))
    if not object_of(draft, q, quantity.unit_property):
        items.append(triple(q, quantity.unit_property, unit_var))
    variables = {value: XSD + "double", unit_var: quantity.unit_category}
    if new:
        variables[q] = quantity.iri
    return items, q, value, unit_var, variables


def _linear(value: str, factor: str, offset: str) -> BinOp:
    return BinOp(op="+", left=BinOp(op="*", left=Var(name=value), right=Var(name=factor)),
                 right=Var(name=offset))
