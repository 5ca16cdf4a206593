"""The typed model of a SELECT query held by a query container, and its SPARQL 1.1 form.

Values live in the model as RDF terms (:class:`Const`) and reach the text only through
``kgctl.store.sparql.term_to_sparql``; names (variables, IRIs) are validated when built.

>>> q = SelectQuery(
...     prefixes=(("ex", "http://example.org/"),),
...     where=Group(items=(
...         Triple(s=Var(name="x"), p=Path.of("http://example.org/p"), o=Var(name="y")),
...         Filter(expr=Call(name="REGEX",
...                          args=(Var(name="y"), Const.string('a"b'), Const.string("i")))),
...     )),
...     select=(Var(name="x"),),
... )
>>> print(q.to_sparql())
PREFIX ex: <http://example.org/>
SELECT DISTINCT ?x WHERE {
  ?x ex:p ?y .
  FILTER(REGEX(?y, "a\\"b", "i"))
}
"""

from __future__ import annotations

import re
from typing import Literal as TypingLiteral

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict, field_validator

from kgctl.store.sparql import term_to_sparql

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PN_LOCAL = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_INDENT = "  "
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
OPERATORS = (*COMPARISONS, "+", "-", "*", "/", "&&", "||")
FUNCTIONS = ("REGEX", "STR", "LCASE", "CONTAINS", "BOUND", "SAMETERM", "ISIRI", "ISLITERAL")
AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Var(Frozen):
    kind: TypingLiteral["var"] = "var"
    name: str

    @field_validator("name")
    @classmethod
    def _valid(cls, name: str) -> str:
        if not _VAR_NAME.match(name):
            raise ValueError(f"invalid variable name {name!r}")
        return name

    def render(self, prefixes: dict[str, str]) -> str:
        return "?" + self.name


class Iri(Frozen):
    kind: TypingLiteral["iri"] = "iri"
    value: str

    @field_validator("value")
    @classmethod
    def _valid(cls, value: str) -> str:
        ox.NamedNode(value)  # raises ValueError on a malformed IRI
        return value

    def render(self, prefixes: dict[str, str]) -> str:
        return render_iri(self.value, prefixes)


class Const(Frozen):
    """An RDF literal or IRI used as a value; rendered by the store's escaping function."""

    kind: TypingLiteral["const"] = "const"
    value: str
    iri: bool = False
    datatype: str | None = None
    language: str | None = None

    @classmethod
    def string(cls, text: str) -> Const:
        return cls(value=text)

    @classmethod
    def number(cls, number: float) -> Const:
        return cls(value=repr(float(number)), datatype=XSD + "double")

    @classmethod
    def boolean(cls, flag: bool) -> Const:
        return cls(value="true" if flag else "false", datatype=XSD + "boolean")

    @classmethod
    def node(cls, iri: str) -> Const:
        return cls(value=iri, iri=True)

    @classmethod
    def of(cls, term: ox.NamedNode | ox.Literal) -> Const:
        if isinstance(term, ox.NamedNode):
            return cls.node(term.value)
        datatype = None if term.language else term.datatype.value
        if datatype == XSD + "string":
            datatype = None
        return cls(value=term.value, datatype=datatype, language=term.language)

    def term(self) -> ox.NamedNode | ox.Literal:
        if self.iri:
            return ox.NamedNode(self.value)
        if self.language:
            return ox.Literal(self.value, language=self.language)
        datatype = ox.NamedNode(self.datatype) if self.datatype else None
        return ox.Literal(self.value, datatype=datatype)

    def render(self, prefixes: dict[str, str]) -> str:
        return term_to_sparql(self.term())


Node = Var | Iri | Const


class PathStep(Frozen):
    iri: str
    inverse: bool = False
    modifier: TypingLiteral["", "*", "+", "?"] = ""

    def render(self, prefixes: dict[str, str]) -> str:
        text = "a" if self.iri == RDF_TYPE and not self.modifier else render_iri(self.iri, prefixes)
        return ("^" if self.inverse else "") + text + self.modifier


class Path(Frozen):
    """A sequence property path (``p1/^p2/p3*``); one plain step is an ordinary predicate."""

    steps: tuple[PathStep, ...]

    @classmethod
    def of(cls, *iris: str) -> Path:
        return cls(steps=tuple(PathStep(iri=Iri(value=i).value) for i in iris))

    def render(self, prefixes: dict[str, str]) -> str:
        return "/".join(step.render(prefixes) for step in self.steps)


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


class BinOp(Frozen):
    kind: TypingLiteral["op"] = "op"
    op: str
    left: Expr
    right: Expr

    @field_validator("op")
    @classmethod
    def _valid(cls, op: str) -> str:
        if op not in OPERATORS:
            raise ValueError(f"unknown operator {op!r}")
        return op

    def variables(self) -> set[str]:
        return expr_variables(self.left) | expr_variables(self.right)

    def render(self, prefixes: dict[str, str]) -> str:
        return f"({self.left.render(prefixes)} {self.op} {self.right.render(prefixes)})"


class Call(Frozen):
    kind: TypingLiteral["call"] = "call"
    name: str
    args: tuple[Expr, ...]

    @field_validator("name")
    @classmethod
    def _valid(cls, name: str) -> str:
        if name not in FUNCTIONS:
            raise ValueError(f"unknown function {name!r}")
        return name

    def variables(self) -> set[str]:
        return set().union(*(expr_variables(a) for a in self.args))

    def render(self, prefixes: dict[str, str]) -> str:
        return f"{self.name}({', '.join(a.render(prefixes) for a in self.args)})"


class In(Frozen):
    kind: TypingLiteral["in"] = "in"
    expr: Expr
    values: tuple[Const | Iri, ...]

    def variables(self) -> set[str]:
        return expr_variables(self.expr)

    def render(self, prefixes: dict[str, str]) -> str:
        members = ", ".join(v.render(prefixes) for v in self.values)
        return f"({self.expr.render(prefixes)} IN ({members}))"


Expr = Var | Const | Iri | BinOp | Call | In


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


Element = Triple | Filter | Values | Optional | Minus


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
    where: Group = Group()
    group_by: tuple[Var, ...] = ()
    having: tuple[Having, ...] = ()
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None

    @property
    def grouped(self) -> bool:
        return bool(self.group_by or self.aggregates)

    def projection(self) -> list[str]:
        """Rendered projection. In a grouped query the group keys come first, then the other
        selected variables as ``(SAMPLE(?v) AS ?v_sample)``, then the aggregates."""
        pm = dict(self.prefixes)
        if not self.grouped:
            return [v.render(pm) for v in self.select] or ["*"]
        keys = [v.render(pm) for v in self.group_by]
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
            [v.name for v in self.group_by]
            + [f"{v.name}_sample" for v in self.select if v not in self.group_by]
            + [a.alias.name for a in self.aggregates]
        )

    def to_sparql(self, *, limit: int | None = None) -> str:
        """Strict SPARQL 1.1 text; ``limit`` overrides the model's LIMIT (dry runs)."""
        pm = dict(self.prefixes)
        head = "SELECT " + ("DISTINCT " if self.distinct else "") + " ".join(self.projection())
        lines = [head + " WHERE {"]
        lines += self.where.render(pm, 1)
        lines.append("}")
        if self.group_by:
            lines.append("GROUP BY " + " ".join(v.render(pm) for v in self.group_by))
        if self.having:
            lines.append("HAVING " + " ".join(h.render(pm) for h in self.having))
        if self.order_by:
            lines.append("ORDER BY " + " ".join(k.render(pm) for k in self.order_by))
        effective = limit if limit is not None else self.limit
        if effective is not None:
            lines.append(f"LIMIT {int(effective)}")
        if self.offset:
            lines.append(f"OFFSET {int(self.offset)}")
        return _with_prefixes(self.prefixes, lines)

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


# Pure helpers.


def expr_variables(expr: Expr) -> set[str]:
    """Variables mentioned by an expression.

    >>> sorted(expr_variables(BinOp(op=">", left=Var(name="a"), right=Const.number(1))))
    ['a']
    """
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, Const | Iri):
        return set()
    return expr.variables()


def render_iri(iri: str, prefixes: dict[str, str]) -> str:
    """Prefixed name when a prefix covers the IRI and the rest is a plain local name.

    >>> render_iri("http://example.org/a", {"ex": "http://example.org/"})
    'ex:a'
    >>> render_iri("http://example.org/a/b", {"ex": "http://example.org/"})
    '<http://example.org/a/b>'
    """
    best = max(
        (p for p, ns in prefixes.items() if iri.startswith(ns) and _PN_LOCAL.match(iri[len(ns):])),
        key=lambda p: len(prefixes[p]),
        default=None,
    )
    return f"{best}:{iri[len(prefixes[best]):]}" if best else term_to_sparql(ox.NamedNode(iri))


def prune(query: SelectQuery) -> SelectQuery:
    """Drop dead patterns, only where that cannot change the answer: repeated elements, and
    OPTIONAL blocks binding nothing used elsewhere when the query is DISTINCT and ungrouped
    (an OPTIONAL never removes rows; DISTINCT absorbs the rows it could duplicate); then
    put required patterns first where that is safe (:func:`hoist_required`).

    >>> t = Triple(s=Var(name="a"), p=Path.of("http://ex.org/p"), o=Var(name="b"))
    >>> o = Optional(group=Group(items=(Triple(s=Var(name="a"), p=Path.of("http://ex.org/q"),
    ...                                        o=Var(name="c")),)))
    >>> q = SelectQuery(where=Group(items=(t, t, o)), select=(Var(name="a"),))
    >>> len(prune(q).where.items)
    1
    >>> len(prune(q.model_copy(update={"select": (Var(name="c"),)})).where.items)
    2
    """
    items: list[Element] = []
    for item in query.where.items:
        if item not in items:
            items.append(item)
    if query.distinct and not query.grouped:
        used = {v.name for v in query.select} | {k.var.name for k in query.order_by}
        if not query.select:
            used |= query.where.variables()
        required = set().union(*(o.variables() for o in items if isinstance(o, Triple | Values)))
        for item in items:
            if isinstance(item, Filter):
                used |= item.variables()
            elif isinstance(item, Minus):
                used |= item.group.variables()
        kept = []
        for i, item in enumerate(items):
            if isinstance(item, Optional):
                others = set().union(*(o.variables() for j, o in enumerate(items)
                                       if j != i and isinstance(o, Optional)))
                if not (item.variables() - required) & (used | others):
                    continue
            kept.append(item)
        items = kept
    return query.model_copy(update={"where": Group(items=hoist_required(items))})


def hoist_required(items: list[Element] | tuple[Element, ...]) -> tuple[Element, ...]:
    """Move each required pattern (triple, VALUES) ahead of the OPTIONAL / MINUS blocks and
    FILTERs before it, as far as the answer cannot change: past an OPTIONAL or MINUS only when
    the pattern shares no variable with the block that the patterns before the block may leave
    unbound ((A OPT B) JOIN C = (A JOIN C) OPT B when vars(C) & vars(B) lie in vars(A); FILTERs
    apply to the whole group). Otherwise engines join the required pattern after a left join,
    which on a large graph turns a millisecond step into seconds.

    >>> a = Triple(s=Var(name="s"), p=Path.of("http://ex.org/p"), o=Var(name="x"))
    >>> o = Optional(group=Group(items=(Triple(s=Var(name="s"), p=Path.of("http://ex.org/q"),
    ...                                        o=Var(name="y")),)))
    >>> c = Triple(s=Var(name="s"), p=Path.of("http://ex.org/r"), o=Var(name="z"))
    >>> [i.kind for i in hoist_required([a, o, c])]
    ['triple', 'triple', 'optional']
    >>> d = Triple(s=Var(name="y"), p=Path.of("http://ex.org/r"), o=Var(name="z"))
    >>> [i.kind for i in hoist_required([a, o, d])]
    ['triple', 'optional', 'triple']
    """
    out: list[Element] = []
    for item in items:
        at = len(out)
        if isinstance(item, Triple | Values):
            while at and _can_pass(item, out[at - 1], out[:at - 1]):
                at -= 1
        out.insert(at, item)
    return tuple(out)


def _can_pass(item: Triple | Values, block: Element, before: list[Element]) -> bool:
    if isinstance(block, Filter):
        return True
    if not isinstance(block, Optional | Minus):
        return False
    bound = set().union(*(b.variables() for b in before if isinstance(b, Triple) or (
        isinstance(b, Values) and all(c is not None for row in b.rows for c in row))))
    return not (item.variables() & (block.group.variables() - bound))


def _with_prefixes(prefixes: tuple[tuple[str, str], ...], lines: list[str]) -> str:
    """PREFIX block (only the prefixes the body uses) followed by the body."""
    body = "\n".join(lines)
    used = [f"PREFIX {p}: <{ns}>" for p, ns in prefixes
            if re.search(rf"(?<![\w-]){re.escape(p)}:", body)]
    return "\n".join([*used, body])


def _block(keyword: str, group: Group, prefixes: dict[str, str], depth: int) -> list[str]:
    pad = _INDENT * depth
    return [f"{pad}{keyword} {{", *group.render(prefixes, depth + 1), f"{pad}}}"]


for _model in (BinOp, Call, In, Filter, Optional, Minus, Group, Having, SelectQuery):
    _model.model_rebuild()
