"""The typed model of a SELECT query held by a query container, and its SPARQL 1.1 form.

Group graph patterns (triples, FILTER, VALUES, OPTIONAL, MINUS, GRAPH, BIND, sub-selects) over the
terms and expressions of :mod:`kgctl.retrieval.terms`.

>>> q = SelectQuery(
...     prefixes=(("ex", "http://example.org/"),),
...     where=Group(items=(
...         Triple(s=Var(name="x"), p=Path.of("http://example.org/p"), o=Var(name="y")),
...         Filter(expr=BinOp(op="=", left=Var(name="y"), right=Const.string('a"b'))),
...     )),
...     select=(Var(name="x"),),
... )
>>> print(q.to_sparql())
PREFIX ex: <http://example.org/>
SELECT DISTINCT ?x WHERE {
  ?x ex:p ?y .
  FILTER(?y = "a\\"b")
}
>>> inner = q.model_copy(update={"prefixes": (), "select": (), "group_by": (Var(name="x"),),
...     "aggregates": (Aggregate(function="COUNT", var=Var(name="y"), alias=Var(name="n")),),
...     "where": q.where.model_copy(update={"items": q.where.items[:1]})})
>>> outer = SelectQuery(prefixes=q.prefixes, where=Group(items=(SubSelect(query=inner),)),
...     aggregates=(Aggregate(function="AVG", var=Var(name="n"), alias=Var(name="mean")),))
>>> print(outer.to_sparql())
PREFIX ex: <http://example.org/>
SELECT DISTINCT (AVG(?n) AS ?mean) WHERE {
  {
    SELECT DISTINCT ?x (COUNT(?y) AS ?n) WHERE {
      ?x ex:p ?y .
    }
    GROUP BY ?x
  }
}
"""

from __future__ import annotations

import re
from typing import Literal as TypingLiteral

import pyoxigraph as ox
from pydantic import Field, field_validator

from kgctl.retrieval.terms import (
    COMPARISONS,
    BinOp,
    Const,
    Expr,
    Frozen,
    Iri,
    Node,
    Path,
    Var,
    expr_variables,
)
from kgctl.store.sparql import term_to_sparql

_INDENT = "  "
AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT")


class Triple(Frozen):
    kind: TypingLiteral["triple"] = "triple"
    s: Var | Iri | Const
    p: Path
    o: Node

    def variables(self) -> set[str]:
        return {n.name for n in (self.s, self.o) if isinstance(n, Var)}

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        text = f"{self.s.render(prefixes)} {self.p.render(prefixes)} {self.o.render(prefixes)} ."
        return [_INDENT * depth + text]


class Filter(Frozen):
    kind: TypingLiteral["filter"] = "filter"
    expr: Expr

    def variables(self) -> set[str]:
        return expr_variables(self.expr)

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        e = self.expr
        body = (
            f"{e.left.render(prefixes)} {e.op} {e.right.render(prefixes)}"
            if isinstance(e, BinOp) else e.render(prefixes)
        )
        return [f"{_INDENT * depth}FILTER({body})"]


class Values(Frozen):
    kind: TypingLiteral["values"] = "values"
    variables_: tuple[Var, ...]
    rows: tuple[tuple[Const | Iri | None, ...], ...]

    def variables(self) -> set[str]:
        return {v.name for v in self.variables_}

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        head = " ".join(v.render(prefixes) for v in self.variables_)
        rows = " ".join(
            "(" + " ".join("UNDEF" if c is None else c.render(prefixes) for c in row) + ")"
            for row in self.rows
        )
        return [f"{_INDENT * depth}VALUES ({head}) {{ {rows} }}"]


class Optional(Frozen):
    kind: TypingLiteral["optional"] = "optional"
    group: Group

    def variables(self) -> set[str]:
        return self.group.variables()

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        return _block("OPTIONAL", self.group, prefixes, depth)


class Minus(Frozen):
    kind: TypingLiteral["minus"] = "minus"
    group: Group

    def variables(self) -> set[str]:
        return set()  # MINUS binds nothing in the outer scope

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        return _block("MINUS", self.group, prefixes, depth)


class GraphPattern(Frozen):
    """``GRAPH ?g { ... }``: the pattern matched inside one named graph, bound to ``?g``."""

    kind: TypingLiteral["graph"] = "graph"
    graph: Var
    group: Group

    def variables(self) -> set[str]:
        return {self.graph.name} | self.group.variables()

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        return _block(f"GRAPH {self.graph.render(prefixes)}", self.group, prefixes, depth)


class Bind(Frozen):
    """``BIND(expr AS ?var)``."""

    kind: TypingLiteral["bind"] = "bind"
    expr: Expr
    var: Var

    def variables(self) -> set[str]:
        return {self.var.name} | expr_variables(self.expr)

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        return [f"{_INDENT * depth}BIND({self.expr.render(prefixes)} AS "
                f"{self.var.render(prefixes)})"]


class SubSelect(Frozen):
    """``{ SELECT ... }`` nested in a group: binds the inner query's columns only."""

    kind: TypingLiteral["subselect"] = "subselect"
    query: SelectQuery

    def variables(self) -> set[str]:
        return set(self.query.columns())

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        pad = _INDENT * depth
        return [f"{pad}{{", *self.query.lines(prefixes, depth + 1), f"{pad}}}"]


Element = Triple | Filter | Values | Optional | Minus | GraphPattern | Bind | SubSelect


class Group(Frozen):
    items: tuple[Element, ...] = ()

    def variables(self) -> set[str]:
        return set().union(*(item.variables() for item in self.items))

    def render(self, prefixes: dict[str, str], depth: int) -> list[str]:
        return [line for item in self.items for line in item.render(prefixes, depth)]


class Aggregate(Frozen):
    function: str
    var: Var | None = None  # None: COUNT(*)
    distinct: bool = False
    alias: Var
    separator: str | None = None  # GROUP_CONCAT only

    @field_validator("function")
    @classmethod
    def _valid(cls, function: str) -> str:
        if function.upper() not in AGGREGATES:
            raise ValueError(f"unknown aggregate {function!r}")
        return function.upper()

    def render(self, prefixes: dict[str, str]) -> str:
        arg = self.var.render(prefixes) if self.var else "*"
        inner = ("DISTINCT " if self.distinct else "") + arg
        if self.separator is not None:
            inner += f"; SEPARATOR={term_to_sparql(ox.Literal(self.separator))}"
        return f"({self.function}({inner}) AS {self.alias.render(prefixes)})"


class Having(Frozen):
    """``HAVING (AGG(...) op value)``: a condition on one aggregate of the group."""

    aggregate: Aggregate
    op: str
    value: Const

    @field_validator("op")
    @classmethod
    def _valid(cls, op: str) -> str:
        if op not in COMPARISONS:
            raise ValueError(f"unknown comparison {op!r}")
        return op

    def render(self, prefixes: dict[str, str]) -> str:
        call = self.aggregate.render(prefixes)[1:].rsplit(" AS ", 1)[0]
        return f"({call} {self.op} {self.value.render(prefixes)})"


class OrderKey(Frozen):
    var: Var
    descending: bool = False

    def render(self, prefixes: dict[str, str]) -> str:
        text = self.var.render(prefixes)
        return f"DESC({text})" if self.descending else text


class SelectQuery(Frozen):
    prefixes: tuple[tuple[str, str], ...] = ()
    distinct: bool = True
    select: tuple[Var, ...] = ()  # non-aggregate projection (empty: SELECT *)
    aggregates: tuple[Aggregate, ...] = ()
    where: Group = Field(default_factory=lambda: Group())  # Group is complete only below
    group_by: tuple[Var, ...] = ()
    hidden_keys: tuple[Var, ...] = ()  # group keys left out of the projection
    having: tuple[Having, ...] = ()
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None

    @property
    def grouped(self) -> bool:
        return bool(self.group_by or self.aggregates)

    def projection(self, pm: dict[str, str]) -> list[str]:
        """Rendered projection. In a grouped query the group keys come first, then the other
        selected variables as ``(SAMPLE(?v) AS ?v_sample)``, then the aggregates."""
        if not self.grouped:
            return [v.render(pm) for v in self.select] or ["*"]
        keys = [v.render(pm) for v in self.group_by if v not in self.hidden_keys]
        sampled = [
            f"(SAMPLE(?{v.name}) AS ?{v.name}_sample)"
            for v in self.select if v not in self.group_by
        ]
        return keys + sampled + [a.render(pm) for a in self.aggregates]

    def columns(self) -> list[str]:
        """Names of the result columns, in order."""
        if not self.grouped:
            return [v.name for v in self.select] or sorted(self.where.variables())
        return (
            [v.name for v in self.group_by if v not in self.hidden_keys]
            + [f"{v.name}_sample" for v in self.select if v not in self.group_by]
            + [a.alias.name for a in self.aggregates]
        )

    def to_sparql(self, *, limit: int | None = None) -> str:
        """Strict SPARQL 1.1 text; ``limit`` overrides the model's LIMIT (dry runs)."""
        return _with_prefixes(self.prefixes, self.lines(dict(self.prefixes), 0, limit=limit))

    def lines(self, pm: dict[str, str], depth: int, *, limit: int | None = None) -> list[str]:
        """The query without its PREFIX block, indented by `depth` (sub-selects)."""
        pad = _INDENT * depth
        head = "SELECT " + ("DISTINCT " if self.distinct else "") + " ".join(self.projection(pm))
        lines = [pad + head + " WHERE {", *self.where.render(pm, depth + 1), pad + "}"]
        if self.group_by:
            lines.append(pad + "GROUP BY " + " ".join(v.render(pm) for v in self.group_by))
        if self.having:
            lines.append(pad + "HAVING " + " ".join(h.render(pm) for h in self.having))
        if self.order_by:
            lines.append(pad + "ORDER BY " + " ".join(k.render(pm) for k in self.order_by))
        effective = limit if limit is not None else self.limit
        if effective is not None:
            lines.append(f"{pad}LIMIT {int(effective)}")
        if self.offset:
            lines.append(f"{pad}OFFSET {int(self.offset)}")
        return lines

    def dry_run_sparql(self) -> tuple[str, bool]:
        """(text, counts): the cheapest query that is non-empty exactly when the answer is.
        An aggregate without GROUP BY always yields one row, so its pattern is COUNTed."""
        if self.aggregates and not self.group_by and not self.having:
            return self.count_sparql(), True
        return self.to_sparql(limit=1), False

    def count_sparql(self) -> str:
        """``SELECT (COUNT(*) AS ?n)`` over the same pattern: the dry run of an ungrouped
        aggregate, whose own result is one row even when nothing matches."""
        lines = ["SELECT (COUNT(*) AS ?n) WHERE {", *self.where.render(dict(self.prefixes), 1), "}"]
        return _with_prefixes(self.prefixes, lines)


def _with_prefixes(prefixes: tuple[tuple[str, str], ...], lines: list[str]) -> str:
    """PREFIX block (only the prefixes the body uses) followed by the body."""
    body = "\n".join(lines)
    used = [f"PREFIX {p}: <{ns}>" for p, ns in prefixes
            if re.search(rf"(?<![\w-]){re.escape(p)}:", body)]
    return "\n".join([*used, body])


def _block(keyword: str, group: Group, prefixes: dict[str, str], depth: int) -> list[str]:
    pad = _INDENT * depth
    return [f"{pad}{keyword} {{", *group.render(prefixes, depth + 1), f"{pad}}}"]


for _model in (Filter, Optional, Minus, GraphPattern, Bind, SubSelect, Group, Having,
               SelectQuery):
    _model.model_rebuild()
