"""Terms and expressions of the query model: variables, IRIs, constants, property paths and the
FILTER / BIND expressions built from them.

Values live here as RDF terms (:class:`Const`) and reach the text only through
``kgctl.store.sparql.term_to_sparql``; names (variables, IRIs) are validated when built.

>>> Not(expr=Call(name="CONTAINS", args=(Var(name="x"), Const.string('a"b')))).render({})
'!(CONTAINS(?x, "a\\\\"b"))'
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
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
OPERATORS = (*COMPARISONS, "+", "-", "*", "/", "&&", "||")
FUNCTIONS = ("REGEX", "STR", "LCASE", "CONTAINS", "BOUND", "SAMETERM", "ISIRI", "ISLITERAL",
             "IF", "LANG", "LANGMATCHES", "STRSTARTS")
# XSD constructor functions (casts), named by their IRI
CASTS = tuple(XSD + t for t in ("double", "dateTime", "date", "time", "duration", "gYear",
                                "gYearMonth"))


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
    """One step; `either` names the declared inverse of `iri`, walked the other way as an
    alternative (``(sosa:hosts|^sosa:isHostedBy)``): data states a link in either direction."""

    iri: str
    inverse: bool = False
    modifier: TypingLiteral["", "*", "+", "?"] = ""
    either: str = ""

    def render(self, prefixes: dict[str, str]) -> str:
        text = "a" if self.iri == RDF_TYPE and not self.modifier else render_iri(self.iri, prefixes)
        text = ("^" if self.inverse else "") + text
        if self.either:
            text = f"({text}|{'' if self.inverse else '^'}{render_iri(self.either, prefixes)})"
        return text + self.modifier


class Path(Frozen):
    """A sequence property path (``p1/^p2/p3*``); one plain step is an ordinary predicate."""

    steps: tuple[PathStep, ...]

    @classmethod
    def of(cls, *iris: str) -> Path:
        return cls(steps=tuple(PathStep(iri=Iri(value=i).value) for i in iris))

    def render(self, prefixes: dict[str, str]) -> str:
        return "/".join(step.render(prefixes) for step in self.steps)


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


class Not(Frozen):
    """Logical negation ``!(expr)``."""

    kind: TypingLiteral["not"] = "not"
    expr: Expr

    def variables(self) -> set[str]:
        return expr_variables(self.expr)

    def render(self, prefixes: dict[str, str]) -> str:
        return f"!({self.expr.render(prefixes)})"


class Call(Frozen):
    kind: TypingLiteral["call"] = "call"
    name: str
    args: tuple[Expr, ...]

    @field_validator("name")
    @classmethod
    def _valid(cls, name: str) -> str:
        if name not in FUNCTIONS and name not in CASTS:
            raise ValueError(f"unknown function {name!r}")
        return name

    def variables(self) -> set[str]:
        return set().union(*(expr_variables(a) for a in self.args))

    def render(self, prefixes: dict[str, str]) -> str:
        name = render_iri(self.name, prefixes) if self.name in CASTS else self.name
        return f"{name}({', '.join(a.render(prefixes) for a in self.args)})"


class In(Frozen):
    kind: TypingLiteral["in"] = "in"
    expr: Expr
    values: tuple[Const | Iri, ...]

    def variables(self) -> set[str]:
        return expr_variables(self.expr)

    def render(self, prefixes: dict[str, str]) -> str:
        members = ", ".join(v.render(prefixes) for v in self.values)
        return f"({self.expr.render(prefixes)} IN ({members}))"


Expr = Var | Const | Iri | BinOp | Not | Call | In


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


for _model in (BinOp, Not, Call, In):
    _model.model_rebuild()
