"""Walks in a paper's named graph that write plans need: a node's outgoing and incoming
triples, the subjects linking to it (stored and pending), the container holding it, and the
nodes only it owns. They read the store through the draft and change nothing."""

from __future__ import annotations

from pyoxigraph import NamedNode, Triple

from kgctl.instantiation.planner import Draft
from kgctl.ontology.ir import OrderingRule

MEMBERS = "SELECT ?m ?o WHERE { ?c ?member ?m . OPTIONAL { ?m ?order ?o } }"
_IN = "SELECT ?s ?p WHERE { ?s ?p ?o }"
_CONTAINER = "SELECT ?c WHERE { ?c ?member ?m }"


def outgoing(draft: Draft, node: str) -> list[Triple]:
    return list(draft.store.triples(draft.pid, subject=NamedNode(node)))


def incoming(draft: Draft, node: str) -> list[Triple]:
    rows = draft.store.query(_IN, bindings={"o": NamedNode(node)}, paper_id=draft.pid)
    return [Triple(r["s"], r["p"], NamedNode(node)) for r in rows]


def linking(draft: Draft, node: str, prop: str) -> list[str]:
    """Subjects linking to `node` with `prop`: stored and pending."""
    pending = [t.subject.value for t in draft.insert
               if t.object == NamedNode(node) and t.predicate.value == prop]
    stored = [t.subject.value for t in incoming(draft, node) if t.predicate.value == prop]
    return list(dict.fromkeys([*stored, *pending]))


def container_of(draft: Draft, entity: str, rule: OrderingRule) -> str | None:
    rows = draft.store.query(_CONTAINER, bindings={
        "member": NamedNode(rule.member_property), "m": NamedNode(entity)},
        paper_id=draft.pid)
    return next((r["c"].value for r in rows), None)


def owned(draft: Draft, entity: str) -> list[str]:
    """`entity` and the nodes only it owns: quantities and occurrences that nothing else
    points to (named auxiliaries such as vessels stay)."""
    classes = draft.ir.classes
    found, todo = [entity], [entity]
    while todo:
        node = todo.pop()
        for t in outgoing(draft, node):
            child = t.object.value
            if not isinstance(t.object, NamedNode) or child in found:
                continue
            types = draft.index.types.get(child, set())
            if not types or any(classes.get(c) and classes[c].identity == "label"
                                for c in types):
                continue
            owners = {s.subject.value for s in incoming(draft, child)}
            if owners <= set(found):
                found.append(child)
                todo.append(child)
    return found
