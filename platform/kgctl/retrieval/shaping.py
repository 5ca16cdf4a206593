"""Shaping tools: grouping, aggregates (with HAVING), nesting a query as a sub-select (an
aggregate over aggregates), projection and ordering."""

from __future__ import annotations

from collections.abc import Sequence

from kgctl.retrieval.comparisons import LEXICAL, XSD, ordered
from kgctl.retrieval.core import EngineCore
from kgctl.retrieval.drafts import Draft, add, aggregate_type, fresh, with_query
from kgctl.retrieval.feedback import QueryView, reject
from kgctl.retrieval.model import (
    AGGREGATES,
    Aggregate,
    Bind,
    Filter,
    Group,
    Having,
    OrderKey,
    SelectQuery,
    SubSelect,
)
from kgctl.retrieval.schema import NUMERIC_TYPES
from kgctl.retrieval.terms import COMPARISONS, Call, Const, Not, Var

MAX_ROWS = 10_000


class ShapingTools(EngineCore):
    def group_by(self, session: str, query_id: str, variables: Sequence[str]) -> QueryView:
        draft = self._draft(session, query_id)
        keys = tuple(Var(name=self._var(draft, v, query_id)) for v in variables)
        if not keys:
            raise reject("empty_value", "give at least one variable", field="variables",
                         sparql=draft.sparql())
        select = tuple(v for v in draft.query.select if v in keys)
        return self._commit(session, query_id, draft,
                            with_query(draft, group_by=keys, select=select, hidden_keys=()),
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
        note = ""
        if fn in ("SUM", "AVG", "MIN", "MAX") and var is not None:
            draft, var, note = self._as_number(draft, var)
        if fn in ("SUM", "AVG") and draft.variables.get(var) not in NUMERIC_TYPES:
            raise reject("not_numeric", f"?{var} is not numeric", field="variable", value=var,
                         allowed=tuple(v for v, t in draft.variables.items() if t in NUMERIC_TYPES),
                         sparql=draft.sparql())
        name = (self._name(draft, alias) if alias
                else fresh(draft, f"{fn.lower()}_{var or 'rows'}"))
        agg = Aggregate(function=fn, var=Var(name=var) if var else None, distinct=distinct,
                        alias=Var(name=name), separator=", " if fn == "GROUP_CONCAT" else None)
        update: dict = {"aggregates": (*draft.query.aggregates, agg)}
        if having_op is not None:
            if having_value is None:
                raise reject("empty_filter", "having_op needs having_value",
                             field="having_value", sparql=draft.sparql())
            if having_op not in COMPARISONS:
                raise reject("invalid_value", f"unknown comparison {having_op!r}",
                             field="having_op", value=having_op, allowed=COMPARISONS,
                             sparql=draft.sparql())
            cond = Having(aggregate=agg, op=having_op, value=Const.number(having_value))
            update["having"] = (*draft.query.having, cond)
        new = with_query(draft, **update)
        new = new.model_copy(update={"variables": {**draft.variables, name: aggregate_type(fn)}})
        return self._commit(session, query_id, self._draft(session, query_id), new,
                            f"?{name} = {fn}{note}")

    def nest_query(self, session: str, query_id: str) -> QueryView:
        """Make the current query a sub-select of a new outer query whose variables are its
        columns, so that later steps group or aggregate its rows again (e.g. the average of
        per-group counts)."""
        draft = self._draft(session, query_id)
        inner = draft.query.model_copy(update={"prefixes": ()})
        columns = inner.columns()
        variables = {c: draft.variables.get(c, draft.variables.get(c.removesuffix("_sample"), ""))
                     for c in columns}
        outer = SelectQuery(prefixes=self.prefixes, select=tuple(Var(name=c) for c in columns),
                            where=Group(items=(SubSelect(query=inner),)))
        new = Draft(template=draft.template, query=outer, variables=variables)
        return self._commit(session, query_id, draft, new,
                            "nested as a sub-select; its columns are the new variables")

    def select(self, session: str, query_id: str, variables: Sequence[str], *,
               distinct: bool = True) -> QueryView:
        """Set the projection. In a grouped query a group key left out stays in GROUP BY (the
        groups do not change) and is hidden from the columns; the reply says so."""
        draft = self._draft(session, query_id)
        names = [self._var(draft, v, query_id) for v in variables]
        aliases = {a.alias.name for a in draft.query.aggregates}
        keys = draft.query.group_by
        hidden = tuple(k for k in keys if k.name not in names)
        change = "projection " + " ".join(f"?{n}" for n in names)
        if hidden:
            change += ("; group keys " + " ".join(f"?{k.name}" for k in hidden) + " stay in "
                       "GROUP BY but are not shown" + (", and DISTINCT merges rows that differ "
                                                        "only in them" if distinct else ""))
        return self._commit(session, query_id, draft, with_query(
            draft, select=tuple(Var(name=n) for n in names if n not in aliases),
            aggregates=tuple(a for a in draft.query.aggregates if a.alias.name in names)
            if any(n in aliases for n in names) else draft.query.aggregates,
            hidden_keys=hidden, distinct=distinct), change)

    def order_by(self, session: str, query_id: str, variable: str, *, descending: bool = False,
                 limit: int | None = None) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, variable, query_id)
        if limit is not None and not 0 < limit <= MAX_ROWS:
            raise reject("invalid_value", f"limit must be 1..{MAX_ROWS}", field="limit",
                         value=limit, sparql=draft.sparql())
        base, var, note = (draft, var, "") if draft.query.grouped else self._as_number(draft, var)
        keys = (*base.query.order_by, OrderKey(var=Var(name=var), descending=descending))
        return self._commit(session, query_id, draft,
                            with_query(base, order_by=keys, limit=limit or base.query.limit),
                            f"ordered by ?{var}{' desc' if descending else ''}{note}")

    def _as_number(self, draft: Draft, var: str) -> tuple[Draft, str, str]:
        """(draft, variable, note): text values that all read as numbers are cast, bound to a
        new numeric variable ``?<var>_number``, so they order and aggregate as numbers."""
        datatype = draft.variables.get(var, "")
        if datatype in self.ir.classes or ordered(datatype):
            return draft, var, ""
        # every value of the variable must read as a number (then the cast cannot fail)
        other = Filter(expr=Not(expr=Call(name="REGEX", args=(
            Call(name="STR", args=(Var(name=var),)), Const.string(LEXICAL[XSD + "double"])))))
        probe = SelectQuery(prefixes=self.prefixes, select=(Var(name=var),), limit=1,
                            where=Group(items=(*draft.query.where.items, other)))
        sample = probe.model_copy(update={"where": draft.query.where})
        if list(self._select(probe.to_sparql())) or not list(self._select(sample.to_sparql())):
            return draft, var, ""
        out = fresh(draft, f"{var}_number")
        cast = Bind(expr=Call(name=XSD + "double", args=(Var(name=var),)), var=Var(name=out))
        return (add(draft, cast, variables={out: XSD + "double"}), out,
                f" (text values cast to xsd:double as ?{out})")
