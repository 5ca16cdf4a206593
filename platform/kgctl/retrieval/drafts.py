"""A container's draft (the typed query plus its variable registry) and pure helpers that build
the next draft from the current one; no step here touches the store.

>>> d = Draft(template="t", query=SelectQuery(), variables={"s": "http://ex.org/C"})
>>> d2 = add(d, triple("s", "http://ex.org/p", "o"), variables={"o": "http://ex.org/D"})
>>> object_of(d2, "s", "http://ex.org/p"), fresh(d2, "o"), sorted(d2.variables)
('o', 'o_2', ['o', 's'])
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from kgctl.ontology.ir import OntologyIR
from kgctl.retrieval.model import (
    Element,
    Filter,
    GraphPattern,
    Group,
    Minus,
    Optional,
    SelectQuery,
    Triple,
)
from kgctl.retrieval.prune import prune
from kgctl.retrieval.terms import XSD, Path, Var


class Draft(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    template: str
    query: SelectQuery
    variables: dict[str, str]  # variable -> class or datatype IRI

    def sparql(self) -> str:
        return prune(self.query).to_sparql()


def triple(s: str, prop: str, o: str) -> Triple:
    return Triple(s=Var(name=s), p=Path.of(prop), o=Var(name=o))


def add(draft: Draft, *items: Element, variables: dict[str, str] | None = None,
        select: Sequence[str] = ()) -> Draft:
    """The draft with `items` appended to its WHERE group and `select` to its projection."""
    query = draft.query.model_copy(update={
        "where": Group(items=(*draft.query.where.items, *items)),
        "select": (*draft.query.select, *(Var(name=n) for n in select))})
    return Draft(template=draft.template, query=query,
                 variables={**draft.variables, **(variables or {})})


def with_query(draft: Draft, **update) -> Draft:
    return draft.model_copy(update={"query": draft.query.model_copy(update=update)})


def walk(group: Group) -> Iterator[Element]:
    """The elements of a group and of the OPTIONAL blocks in it (patterns that bind)."""
    for item in group.items:
        yield item
        if isinstance(item, Optional):
            yield from walk(item.group)


def object_of(draft: Draft, var: str, prop: str) -> str | None:
    """The variable already standing for `?var prop ?x` (required or optional), if any."""
    for item in walk(draft.query.where):
        if (isinstance(item, Triple) and item.s == Var(name=var) and isinstance(item.o, Var)
                and len(item.p.steps) == 1 and item.p.steps[0].iri == prop
                and not item.p.steps[0].inverse):
            return item.o.name
    return None


def object_var(draft: Draft, var: str, prop: str, stem: str) -> tuple[str, bool]:
    """(variable for the object of ``?var prop``, whether it is new)."""
    found = object_of(draft, var, prop)
    return (found, False) if found else (fresh(draft, f"{var}_{stem}"), True)


def required_variables(draft: Draft) -> set[str]:
    """Variables every answer row binds (patterns outside OPTIONAL / MINUS blocks)."""
    return set().union(*(i.variables() for i in draft.query.where.items
                         if not isinstance(i, Optional | Minus | Filter)))


def fresh(draft: Draft, stem: str, *, taken: Sequence[str] = ()) -> str:
    base = re.sub(r"\W+", "_", stem).strip("_") or "x"
    used = set(draft.variables) | set(taken) | _all_variables(draft.query.where)
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


def valid_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name))


def aggregate_type(fn: str) -> str:
    return XSD + ("integer" if fn == "COUNT" else "string" if fn == "GROUP_CONCAT" else "double")


def common_ancestor(ir: OntologyIR, classes: Sequence[str]) -> str:
    first = ir.classes.get(classes[0]) if classes else None
    for candidate in (first.iri, *first.ancestors) if first else ():
        if all(ir.is_a(c, candidate) for c in classes):
            return candidate
    return classes[0] if classes else XSD + "string"


def _all_variables(group: Group) -> set[str]:
    """Every variable named anywhere in the group, MINUS blocks included (names stay unique)."""
    names: set[str] = set()
    for item in group.items:
        names |= item.variables()
        if isinstance(item, Minus | Optional | GraphPattern):
            names |= _all_variables(item.group)
    return names
