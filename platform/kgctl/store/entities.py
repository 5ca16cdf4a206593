"""The entity filter: a name or IRI -> the canonical identities it names -> every entity of
every paper with one of those identities (store.merged). A filter on one name of a thing thus
finds the papers that used it under any other name (an abbreviation finds the full name).

A name matches, case-insensitively and whole, an entity's label (rdfs:label, skos:altLabel)
or an identity's preferred label; an IRI matches an entity or an identity. Papers that have no
merged graph yet (`kgctl store merge`) are found by their own labels only.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import Literal, NamedNode

from kgctl.store.base import GraphStore
from kgctl.store.iris import paper_of_graph
from kgctl.store.merged import CANONICAL
from kgctl.store.views import MERGED_BASE

BY_NAME = f"""
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
SELECT DISTINCT ?g ?x ?own ?identity WHERE {{
  GRAPH ?g {{ ?x rdfs:label|skos:altLabel|skos:prefLabel ?n }}
  FILTER(isLiteral(?n) && LCASE(STR(?n)) = LCASE(STR(?name)))
  OPTIONAL {{ GRAPH ?h {{ ?x <{CANONICAL.value}> ?own }} }}
  BIND(EXISTS {{ GRAPH ?k {{ ?m <{CANONICAL.value}> ?x }} }} AS ?identity)
}}
"""
BY_IRI = f"""
SELECT DISTINCT ?c WHERE {{ GRAPH ?g {{
  {{ ?e <{CANONICAL.value}> ?c }} UNION {{ ?m <{CANONICAL.value}> ?e BIND(?e AS ?c) }} }} }}
"""
MEMBERS = f"SELECT DISTINCT ?g ?x WHERE {{ GRAPH ?g {{ ?x <{CANONICAL.value}> ?c }} }}"


def identities(store: GraphStore, entity: str) -> tuple[set[str], dict[str, set[str]]]:
    """The identities `entity` (a name or an IRI) names, and the entities of papers without
    an identity that it names by their own label (paper id -> entity IRIs)."""
    if "://" in entity:
        rows = store.query(BY_IRI, bindings={"e": NamedNode(entity)}, view="merged")
        return {r["c"].value for r in rows}, {}
    found: set[str] = set()
    unlinked: dict[str, set[str]] = {}
    for row in store.query(BY_NAME, bindings={"name": Literal(entity)}, view="merged"):
        if row["own"] is not None:
            found.add(row["own"].value)
        elif row["identity"].value == "true":
            found.add(row["x"].value)
        elif (pid := paper_id_of(row["g"].value)) is not None:
            unlinked.setdefault(pid, set()).add(row["x"].value)
    return found, unlinked


def members(store: GraphStore, entity: str) -> dict[str, set[str]]:
    """Paper id -> the entities of that paper that `entity` names (see the module doc)."""
    found, out = identities(store, entity)
    for identity in sorted(found):
        for row in store.query(MEMBERS, bindings={"c": NamedNode(identity)}, view="merged"):
            if (pid := paper_id_of(row["g"].value)) is not None:
                out.setdefault(pid, set()).add(row["x"].value)
    return out


def papers_using(store: GraphStore, entity: str) -> list[str]:
    """The papers that have an entity `entity` names, sorted."""
    return sorted(members(store, entity))


def same_identity(store: GraphStore, iris: Iterable[str]) -> list[str]:
    """`iris` plus every entity sharing an identity with one of them, sorted."""
    out = set(iris)
    for iri in sorted(out):
        for entities in members(store, iri).values():
            out |= entities
    return sorted(out)


def paper_id_of(graph: str) -> str | None:
    """The paper of a paper graph or of a merged graph.

    >>> paper_id_of(MERGED_BASE + "p1"), paper_id_of("https://w3id.org/kgctl/paper/p2")
    ('p1', 'p2')
    """
    if graph.startswith(MERGED_BASE):
        rest = graph[len(MERGED_BASE):]
        return rest if rest and "/" not in rest else None
    return paper_of_graph(graph)
