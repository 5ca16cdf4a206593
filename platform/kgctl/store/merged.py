"""The merged view: every grounded or deduplicated entity with one canonical identity.

`kgctl ground` links a paper's entities to a reference KG (owl:sameAs in the paper graph, or IRIs
rewritten) and `kgctl dedup` links entities across papers (canonical nodes + owl:sameAs in the
dedup graph). This module folds both into one identity per entity: the reference entity it is
grounded to; else the reference entity of a member of its dedup cluster; else its dedup
canonical node. Each paper gets a merged graph (store.views.merged_graph_iri) beside its paper
graph: `?entity kg:canonical ?identity` and `?identity skos:prefLabel ?label` for each linked
entity, and a provenance graph saying which method, with which score, linked each entity. The
paper's facts are not copied, so the union of all graphs holds each fact once. The entities keep
their own IRIs: an entity of a paper is often one use of a thing (an amount in one step), and
two uses of one thing must not become one node.

Paper graphs and the dedup graph are read, never written. `kgctl ground`, `kgctl dedup` and
`kgctl store merge` rebuild the merged graphs of the papers they touch, one transaction per
paper (its merged graph and provenance together): memory holds the identity map (one entry per
linked entity) and one paper.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict
from pyoxigraph import Literal, NamedNode, Quad

from kgctl.store.base import FLUSH_QUADS, GraphStore
from kgctl.store.iris import PAPER_BASE, graph_iri
from kgctl.store.provenance import KG, RDF_TYPE, record_from_literal
from kgctl.store.views import (
    DEDUP_GRAPH,
    DEDUP_PROVENANCE,
    merged_graph_iri,
    merged_provenance_iri,
)

CANONICAL = NamedNode(KG + "canonical")
PREF_LABEL = NamedNode("http://www.w3.org/2004/02/skos/core#prefLabel")
IDENTITY_LINK = NamedNode(KG + "IdentityLink")
XSD_DOUBLE = NamedNode("http://www.w3.org/2001/XMLSchema#double")
GROUND_TOOL = "ground"  # the tool name of grounding's call records

SAME_AS_LINKS = """
SELECT ?g ?m ?r WHERE { GRAPH ?g { ?m <http://www.w3.org/2002/07/owl#sameAs> ?r } }
"""
GROUND_RECORDS = f"""
SELECT ?record WHERE {{ GRAPH ?g {{ ?call <{KG}tool> ?tool ; <{KG}seq> ?seq ;
                                         <{KG}record> ?record }} }} ORDER BY ?seq
"""
DEDUP_LINKS = """
SELECT ?m ?c ?label WHERE { GRAPH ?dedup {
  ?m <http://www.w3.org/2002/07/owl#sameAs> ?c
  OPTIONAL { ?c <http://www.w3.org/2000/01/rdf-schema#label> ?label } } }
"""
DEDUP_DECISIONS = f"""
SELECT ?a ?b ?score ?method WHERE {{ GRAPH ?prov {{
  ?d a ?type ; <{KG}left> ?a ; <{KG}right> ?b ; <{KG}score> ?score ; <{KG}method> ?method ;
     <{KG}accepted> true }} }}
"""


class Link(BaseModel):
    """Why one entity has its identity: the method (`grounding:<match method>`, `dedup:<pair
    method>`, or `dedup+grounding:<pair method>` when another member of its cluster was
    grounded) and score; `via` is the dedup canonical node the link went through."""

    model_config = ConfigDict(frozen=True)
    entity: str
    identity: str
    label: str
    method: str
    score: float | None = None
    via: str | None = None


class Grounded(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    label: str
    method: str
    score: float | None = None


class LinkSources(BaseModel):
    """What the store says about identities: grounding links, dedup clusters and decisions."""

    model_config = ConfigDict(frozen=True)
    grounded: dict[str, Grounded] = {}  # entity -> its reference entity
    cluster_of: dict[str, str] = {}  # entity -> dedup canonical node
    cluster_label: dict[str, str] = {}  # dedup canonical node -> its label
    decision: dict[str, tuple[str, float]] = {}  # entity -> best (pair method, score)

    def links(self) -> dict[str, Link]:
        """The identity of every grounded or deduplicated entity (pure; see the module doc).

        >>> ev = LinkSources(
        ...     grounded={"p1/a": Grounded(iri="ref/x", label="X", method="exact", score=100)},
        ...     cluster_of={"p1/a": "c1", "p2/b": "c1", "p2/c": "c2"},
        ...     cluster_label={"c1": "x", "c2": "Y"}, decision={"p2/b": ("name", 95.0)})
        >>> for e, k in sorted(ev.links().items()):
        ...     print(e, k.identity, k.label, k.method)
        p1/a ref/x X grounding:exact
        p2/b ref/x X dedup+grounding:name
        p2/c c2 Y dedup
        """
        members: dict[str, list[str]] = defaultdict(list)
        for entity, canonical in self.cluster_of.items():
            members[canonical].append(entity)
        cluster_ref = {c: _most_common([self.grounded[m] for m in ms if m in self.grounded])
                       for c, ms in members.items()}
        out = {}
        for entity in sorted(set(self.grounded) | set(self.cluster_of)):
            canonical = self.cluster_of.get(entity)
            method, score = self.decision.get(entity, (None, None))
            if entity in self.grounded:
                ref = self.grounded[entity]
                out[entity] = Link(entity=entity, identity=ref.iri, label=ref.label,
                                   method=f"grounding:{ref.method}", score=ref.score)
            elif canonical and cluster_ref[canonical] is not None:
                ref = cluster_ref[canonical]
                out[entity] = Link(entity=entity, identity=ref.iri, label=ref.label,
                                   method="dedup+grounding" + (f":{method}" if method else ""),
                                   score=score, via=canonical)
            else:
                out[entity] = Link(entity=entity, identity=canonical,
                                   label=self.cluster_label.get(canonical, canonical),
                                   method="dedup" + (f":{method}" if method else ""),
                                   score=score, via=canonical)
        return out


def _most_common(refs: list[Grounded]) -> Grounded | None:
    if not refs:
        return None
    counts = Counter(r.iri for r in refs)
    best = min(counts, key=lambda iri: (-counts[iri], iri))
    return next(r for r in refs if r.iri == best)


def read_sources(store: GraphStore) -> LinkSources:
    """Grounding links of every paper graph (labels, methods and scores from the grounding
    call records) and the dedup graph with its accepted decisions."""
    records: dict[str, Grounded] = {}  # the latest decision per entity
    rewritten: dict[str, Grounded] = {}  # --mode rewrite: the entity now is the target
    for row in store.query(GROUND_RECORDS, bindings={"tool": Literal(GROUND_TOOL)}):
        args = record_from_literal(row["record"]).arguments
        match = args.get("match") or {}
        if not (isinstance(match, dict) and match.get("iri") and args.get("entity")):
            continue
        found = Grounded(iri=match["iri"], label=str(match.get("label") or match["iri"]),
                         method=str(match.get("method") or "match"), score=match.get("score"))
        records[args["entity"]] = found
        if args.get("mode") == "rewrite" and found.method != "hydrate":
            rewritten[found.iri] = found
    grounded = dict(rewritten)
    for row in store.query(SAME_AS_LINKS):
        entity, target = row["m"].value, row["r"].value
        if not row["g"].value.startswith(PAPER_BASE) or target.startswith(PAPER_BASE):
            continue
        known = records.get(entity)
        grounded[entity] = known if known and known.iri == target else Grounded(
            iri=target, label=target, method="sameAs")
    cluster_of, cluster_label = {}, {}
    for row in store.query(DEDUP_LINKS, bindings={"dedup": DEDUP_GRAPH}):
        cluster_of[row["m"].value] = row["c"].value
        if row["label"] is not None:
            cluster_label[row["c"].value] = row["label"].value
    decision: dict[str, tuple[str, float]] = {}
    for row in store.query(DEDUP_DECISIONS, bindings={"prov": DEDUP_PROVENANCE}):
        pair = (row["method"].value, float(row["score"].value))
        for entity in (row["a"].value, row["b"].value):
            if entity not in decision or pair[1] > decision[entity][1]:
                decision[entity] = pair
    return LinkSources(grounded=grounded, cluster_of=cluster_of, cluster_label=cluster_label,
                       decision=decision)


class MergeSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    papers: int
    entities: int  # entities given an identity
    identities: int
    by_method: dict[str, int]


def paper_quads(store: GraphStore, pid: str, links: dict[str, Link]
                ) -> tuple[list[Quad], list[Link]]:
    """The merged graph and its provenance of one paper, and the links they hold."""
    graph, prov = merged_graph_iri(pid), merged_provenance_iri(pid)
    quads: list[Quad] = []
    used = {s: links[s] for t in store.triples(pid) if (s := t.subject.value) in links}
    for link in sorted(used.values(), key=lambda k: k.entity):
        entity, identity = NamedNode(link.entity), NamedNode(link.identity)
        quads += [Quad(entity, CANONICAL, identity, graph),
                  Quad(identity, PREF_LABEL, Literal(link.label), graph)]
        digest = hashlib.sha256(link.entity.encode()).hexdigest()[:16]
        node = NamedNode(f"{prov.value}/link/{digest}")
        facts = [(RDF_TYPE, IDENTITY_LINK), (NamedNode(KG + "entity"), entity),
                 (NamedNode(KG + "identity"), identity),
                 (NamedNode(KG + "method"), Literal(link.method))]
        if link.score is not None:
            facts.append((NamedNode(KG + "score"), Literal(str(link.score), datatype=XSD_DOUBLE)))
        if link.via is not None:
            facts.append((NamedNode(KG + "via"), NamedNode(link.via)))
        quads += [Quad(node, p, o, prov) for p, o in facts]
    return list(dict.fromkeys(quads)), list(used.values())


def rebuild(store: GraphStore, papers: Iterable[str] | None = None, *,
            progress: Callable[[str], None] = lambda _: None) -> MergeSummary:
    """Rebuild the merged graphs of `papers` (default: every paper) and of the papers whose
    entities share a dedup cluster with theirs (their identities may have changed too)."""
    known = store.papers()
    wanted = set(known if papers is None else papers) & set(known)
    chosen = known if wanted == set(known) else _with_neighbours(store, wanted)
    progress(f"reading the identities for {len(chosen)} paper(s)")
    links = read_sources(store).links()
    written: list[Link] = []
    unflushed = 0
    for pid in chosen:
        quads, used = paper_quads(store, pid, links)
        store.replace_graphs([merged_graph_iri(pid), merged_provenance_iri(pid)], quads)
        written += used
        unflushed += len(quads)
        if unflushed >= FLUSH_QUADS:  # bounded memory: RocksDB's write buffers grow otherwise
            store.flush()
            unflushed = 0
    store.flush()
    return MergeSummary(papers=len(chosen), entities=len(written),
                        identities=len({k.identity for k in written}),
                        by_method=dict(Counter(k.method.split(":")[0] for k in written)))


CLUSTER_PAPERS = """
PREFIX owl: <http://www.w3.org/2002/07/owl#>
SELECT DISTINCT ?g WHERE {
  GRAPH ?dedup { ?m owl:sameAs ?c . ?o owl:sameAs ?c }
  GRAPH ?seed { ?m ?p ?x }
  GRAPH ?g { ?o ?q ?y }
}
"""


def _with_neighbours(store: GraphStore, papers: set[str]) -> list[str]:
    found = set(papers)
    for pid in sorted(papers):
        rows = store.query(CLUSTER_PAPERS, bindings={"dedup": DEDUP_GRAPH,
                                                     "seed": graph_iri(pid)})
        found.update(p for r in rows if (p := r["g"].value[len(PAPER_BASE):])
                     and r["g"].value.startswith(PAPER_BASE) and "/" not in p)
    return sorted(found)


PAPER_IDENTITIES = f"""
SELECT ?e ?c ?l ?method ?score ?via WHERE {{
  GRAPH ?g {{ ?e <{CANONICAL.value}> ?c . ?c <{PREF_LABEL.value}> ?l }}
  OPTIONAL {{ GRAPH ?p {{ ?k <{KG}entity> ?e ; <{KG}method> ?method
                          OPTIONAL {{ ?k <{KG}score> ?score }}
                          OPTIONAL {{ ?k <{KG}via> ?via }} }} }}
}}
"""


def links_of_rows(rows: Iterable) -> dict[str, Link]:
    """Entity -> its link, from the rows of PAPER_IDENTITIES."""
    return {r["e"].value: Link(
        entity=r["e"].value, identity=r["c"].value, label=r["l"].value,
        method=r["method"].value if r["method"] else "", score=float(r["score"].value)
        if r["score"] else None, via=r["via"].value if r["via"] else None) for r in rows}


def paper_links(store: GraphStore, pid: str) -> dict[str, Link]:
    """The identity of each linked entity of one paper, as its merged graph holds it."""
    return links_of_rows(store.query(PAPER_IDENTITIES, bindings={
        "g": merged_graph_iri(pid), "p": merged_provenance_iri(pid)}))
