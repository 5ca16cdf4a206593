"""The deduplication job: harvest mentions from the paper graphs, cluster them, and replace the
dedup graph (canonical nodes + owl:sameAs) and its provenance in one transaction.

Paper graphs are never touched. Canonical IRIs are kept across runs: a cluster that contains a
member already linked by an earlier run reuses that canonical node, so adding a paper re-uses
existing clusters and a re-run changes nothing.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pyoxigraph import Literal, NamedNode, Quad

from kgctl.dedup.cluster import Cluster, Mention, Pair, Result, Thresholds, cluster
from kgctl.dedup.keys import NORMALISERS
from kgctl.dedup.spec import DedupSpec
from kgctl.errors import InputError
from kgctl.packs import load_pack
from kgctl.store.base import GraphStore
from kgctl.store.iris import BASE, graph_iri, paper_of_graph, slug
from kgctl.store.views import DEDUP_GRAPH, DEDUP_PROVENANCE

ENTITY_BASE = BASE + "entity/"
KG = BASE + "ns#"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
SAME_AS = NamedNode("http://www.w3.org/2002/07/owl#sameAs")
XSD_DOUBLE = NamedNode("http://www.w3.org/2001/XMLSchema#double")
XSD_BOOLEAN = NamedNode("http://www.w3.org/2001/XMLSchema#boolean")
ALT_NAME_SEPARATOR = ";"
REVIEW_FIELDS = ("spec", "a", "b", "label_a", "label_b", "score", "evidence", "decision")
ENGINES = ("auto", "memory", "duckdb")
AUTO_OUT_OF_CORE = 2_000_000  # mentions of one spec from which `auto` clusters out of core

MENTIONS_QUERY = """
SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s a ?cls . ?s ?p ?o } }
"""
CANONICAL_QUERY = """
PREFIX owl: <http://www.w3.org/2002/07/owl#>
SELECT ?member ?canonical WHERE { GRAPH ?dedup { ?member owl:sameAs ?canonical } }
"""
REVIEW_QUERY = """
SELECT ?a ?b ?accepted WHERE { GRAPH ?prov {
  ?d a ?type ; ?left ?a ; ?right ?b ; ?acc ?accepted } }
"""


class SpecSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    spec: str
    mentions: int
    clusters: int
    merged_clusters: int  # clusters with members from more than one mention
    cross_paper_clusters: int
    merges: int
    grey: int
    refused: int


Normaliser = Callable[[str], "str | None"]


def normalisers(domain: str | Path | None = None) -> dict[str, Normaliser]:
    """The generic key normalisers plus those of a domain pack's `dedup_keys` hook."""
    return {**NORMALISERS, **(load_pack(domain).hook("dedup_keys") or {})}


def harvest(store: GraphStore, spec: DedupSpec, *,
            by_name: Mapping[str, Normaliser] | None = None,
            papers: Iterable[str] | None = None) -> list[Mention]:
    """Mentions of the spec's classes in every paper graph (or those of `papers`), with names
    and normalised keys."""
    by_name = by_name if by_name is not None else normalisers()
    unknown = sorted({k.normalise for k in spec.keys} - set(by_name))
    if unknown:
        raise InputError(f"dedup spec {spec.name!r}: unknown key normaliser(s) "
                         f"{', '.join(unknown)} (known: {', '.join(sorted(by_name))})")
    names: dict[str, set[str]] = defaultdict(set)
    keys: dict[str, set[tuple[str, str]]] = defaultdict(set)
    paper: dict[str, str] = {}
    key_of = {k.property: k for k in spec.keys}
    labels = set(spec.labels)
    graphs = [{}] if papers is None else [{"g": graph_iri(p)} for p in papers]
    rows = (row for cls in spec.classes for g in graphs
            for row in store.query(MENTIONS_QUERY, bindings={"cls": NamedNode(cls), **g}))
    for row in rows:
        pid = paper_of_graph(row["g"].value)
        if pid is None or not isinstance(row["s"], NamedNode):
            continue
        subject, pred, obj = row["s"].value, row["p"].value, row["o"]
        paper[subject] = pid
        if pred in labels and isinstance(obj, Literal):
            names[subject].update(
                part.strip() for part in obj.value.split(ALT_NAME_SEPARATOR) if part.strip())
        elif pred in key_of:
            spec_key = key_of[pred]
            value = by_name[spec_key.normalise](obj.value)
            if value and not (spec_key.normalise == "iri" and paper_of_graph(value)):
                keys[subject].add((spec_key.kind, value))
    return [
        Mention(iri=s, paper=paper[s], labels=tuple(sorted(names[s])), keys=tuple(sorted(keys[s])))
        for s in sorted(paper)
    ]


def _existing_links(store: GraphStore) -> dict[str, str]:
    rows = store.query(CANONICAL_QUERY, bindings={"dedup": DEDUP_GRAPH})
    return {row["member"].value: row["canonical"].value for row in rows}


def _reviewed(store: GraphStore) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    rows = store.query(REVIEW_QUERY, bindings={
        "prov": DEDUP_PROVENANCE, "type": NamedNode(KG + "ReviewDecision"),
        "left": NamedNode(KG + "left"), "right": NamedNode(KG + "right"),
        "acc": NamedNode(KG + "accepted")})
    accept, reject = [], []
    for row in rows:
        pair = (row["a"].value, row["b"].value)
        (accept if row["accepted"].value in ("true", "1") else reject).append(pair)
    return sorted(accept), sorted(reject)


def cluster_mentions(mentions: list[Mention], thresholds: Thresholds, *, engine: str = "auto",
                     memory_limit: str = "2GB", accept: Iterable[tuple[str, str]] = (),
                     reject: Iterable[tuple[str, str]] = (),
                     progress: Callable[[str], None] = lambda _: None, client=None) -> Result:
    """Cluster with the in-memory engine or out of core on DuckDB (same clusters either way);
    `auto` goes out of core from AUTO_OUT_OF_CORE mentions, or with a Dask `client` (whose
    workers then score fuzzy blocks and replay parts)."""
    if engine == "duckdb" or (engine == "auto" and (client is not None
                                                    or len(mentions) >= AUTO_OUT_OF_CORE)):
        from kgctl.dedup.outofcore import OutOfCore  # DuckDB loads only when it is used

        with OutOfCore(memory_limit=memory_limit, client=client) as ooc:
            ooc.add(mentions)
            ooc.run(thresholds, accept=accept, reject=reject,
                    progress=lambda phase: progress(f"clustering out of core: {phase}"))
            return ooc.result()
    return cluster(mentions, thresholds, accept=accept, reject=reject)


def canonical_iris(spec: DedupSpec, clusters: list[Cluster], old: dict[str, str],
                   used: set[str]) -> list[str]:
    """Reuse an earlier canonical IRI when a member had one; else mint from the strongest key or
    the most frequent name, avoiding the IRIs in `used` (the earlier ones, a set made once per
    run). Time per cluster is independent of the number of earlier links. Deterministic for the
    same clusters."""
    taken: set[str] = set()
    last: dict[str, int] = {}  # base -> the number minted last (all below it are taken)
    out = []
    for c in clusters:
        previous = sorted({old[m] for m in c.members if m in old} - taken)
        if previous:
            iri = previous[0]
        else:
            identity = next((f"{k}-{c.keys[k]}" for k in sorted(c.keys)), None)
            base = f"{ENTITY_BASE}{spec.name}/{slug(identity or (c.labels or c.members)[0])}"
            n = last.get(base, 1)
            iri = base if n == 1 else f"{base}-{n}"
            while iri in taken or iri in used:
                n += 1
                iri = f"{base}-{n}"
            last[base] = n
        taken.add(iri)
        out.append(iri)
    return out


def _decision_quads(pairs: Iterable[Pair], kind: str) -> list[Quad]:
    quads = []
    for p in pairs:
        digest = hashlib.sha256(f"{kind} {p.a} {p.b}".encode()).hexdigest()[:16]
        node = NamedNode(f"{BASE}dedup/decision/{digest}")
        for pred, obj in (
            (RDF_TYPE, NamedNode(KG + kind)),
            (NamedNode(KG + "left"), NamedNode(p.a)),
            (NamedNode(KG + "right"), NamedNode(p.b)),
            (NamedNode(KG + "score"), Literal(str(p.score), datatype=XSD_DOUBLE)),
            (NamedNode(KG + "method"), Literal(p.method)),
            (NamedNode(KG + "evidence"), Literal(p.evidence)),
            (NamedNode(KG + "accepted"), Literal(str(p.accepted).lower(), datatype=XSD_BOOLEAN)),
        ):
            quads.append(Quad(node, pred, obj, DEDUP_PROVENANCE))
    return quads


def _output_quads(spec: DedupSpec, result: Result, iris: list[str]) -> list[Quad]:
    quads = []
    for c, iri in zip(result.clusters, iris, strict=True):
        canon = NamedNode(iri)
        # the class is named, not asserted: a query over the union of all graphs (the merged
        # view) must not count a canonical node as one more instance of its papers' class
        quads.append(Quad(canon, RDF_TYPE, NamedNode(KG + "CanonicalEntity"), DEDUP_GRAPH))
        quads.append(Quad(canon, NamedNode(KG + "entityClass"), NamedNode(spec.classes[0]),
                          DEDUP_GRAPH))
        if c.labels:
            label = Counter(c.labels).most_common(1)[0][0]
            quads.append(Quad(canon, RDFS_LABEL, Literal(label), DEDUP_GRAPH))
        quads.extend(Quad(NamedNode(m), SAME_AS, canon, DEDUP_GRAPH) for m in c.members)
    quads += _decision_quads(result.decisions, "MergeDecision")
    quads += _decision_quads(result.refused, "RefusedMerge")
    return quads


def read_review(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Accepted and rejected pairs from a review file (CSV or JSON list of rows)."""
    try:
        text = path.read_text(encoding="utf-8")
        is_json = path.suffix == ".json"
        rows = json.loads(text) if is_json else list(csv.DictReader(text.splitlines()))
    except OSError as exc:
        raise InputError(f"cannot read review file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    except csv.Error as exc:
        raise InputError(f"{path}: not valid CSV ({exc})") from exc
    if not isinstance(rows, list):
        raise InputError(f"{path}: a JSON review file is a list of rows")
    accept, reject = [], []
    for n, row in enumerate(rows, start=2 if path.suffix != ".json" else 1):
        if not isinstance(row, dict) or not _is_iri(row.get("a")) or not _is_iri(row.get("b")):
            raise InputError(f"{path}: row {n} needs the columns 'a' and 'b' holding IRIs")
        decision = str(row.get("decision") or "").strip().lower()
        if decision in ("accept", "yes", "same"):
            accept.append((row["a"], row["b"]))
        elif decision in ("reject", "no", "different"):
            reject.append((row["a"], row["b"]))
        elif decision:
            raise InputError(f"{path}: row {n}: decision {decision!r} is not accept or reject")
    return accept, reject


def _is_iri(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        NamedNode(value)
    except ValueError:
        return False
    return True


def write_review(path: Path, grey: list[tuple[DedupSpec, Pair]], labels: dict[str, str]) -> None:
    """The grey-zone pairs as a CSV for a person to fill the `decision` column."""
    try:
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=REVIEW_FIELDS)
            writer.writeheader()
            for spec, p in grey:
                writer.writerow({"spec": spec.name, "a": p.a, "b": p.b,
                                 "label_a": labels.get(p.a, ""), "label_b": labels.get(p.b, ""),
                                 "score": f"{p.score:g}", "evidence": p.evidence,
                                 "decision": ""})
    except OSError as exc:
        raise InputError(f"cannot write review file {path}: {exc.strerror}") from exc


def run(
    store: GraphStore,
    specs: list[DedupSpec],
    *,
    dry_run: bool = False,
    review_in: Path | None = None,
    review_out: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
    domain: str | Path | None = None,
    engine: str = "auto",
    memory_limit: str = "2GB",
    state: Path | None = None,
    client=None,
) -> list[SpecSummary]:
    """The whole job; writes nothing when `dry_run`. One transaction replaces the dedup graph.
    Key normalisers: the generic ones plus the domain pack's (default: the default pack);
    `engine`, `memory_limit` and `client` as for `cluster_mentions`; `state`: a directory
    where clusters are kept between runs (see `kept_clusters`)."""
    by_name = normalisers(domain)
    if not store.papers():
        raise InputError("the store holds no paper graphs: nothing to deduplicate")
    accept, reject = _reviewed(store)
    new_reviews: list[tuple[tuple[str, str], bool]] = []
    if review_in is not None:
        new_accept, new_reject = read_review(review_in)
        accept += new_accept
        reject += new_reject
        new_reviews = [(p, True) for p in new_accept] + [(p, False) for p in new_reject]
    old = _existing_links(store)
    used = set(old.values())
    out_quads: list[Quad] = []
    grey: list[tuple[DedupSpec, Pair]] = []
    labels: dict[str, str] = {}
    summaries = []
    for spec in specs:
        if state is None:
            progress(f"harvesting {spec.name}")
            mentions = harvest(store, spec, by_name=by_name)
            labels.update((m.iri, "; ".join(m.labels)) for m in mentions)
            progress(f"clustering {len(mentions)} {spec.name} mentions")
            result = cluster_mentions(mentions, spec.thresholds(), engine=engine,
                                      memory_limit=memory_limit, accept=accept, reject=reject,
                                      progress=progress, client=client)
            paper_of = {m.iri: m.paper for m in mentions}
        else:
            result, paper_of = kept_clusters(store, spec, state, by_name=by_name, accept=accept,
                                             reject=reject, labels=labels, progress=progress)
        iris = canonical_iris(spec, result.clusters, old, used)
        out_quads += _output_quads(spec, result, iris)
        grey += [(spec, p) for p in result.grey]
        summaries.append(SpecSummary(
            spec=spec.name, mentions=len(paper_of), clusters=len(result.clusters),
            merged_clusters=sum(len(c.members) > 1 for c in result.clusters),
            cross_paper_clusters=sum(len({paper_of[m] for m in c.members}) > 1
                                     for c in result.clusters),
            merges=len(result.decisions), grey=len(result.grey), refused=len(result.refused)))
    out_quads += _decision_quads(
        [Pair(a=a, b=b, score=100.0, method="review", evidence=f"review file {review_in}",
              accepted=accepted) for (a, b), accepted in new_reviews],
        "ReviewDecision")
    if review_out is not None:
        write_review(review_out, grey, labels)
    if not dry_run:
        progress("writing the dedup graph")
        old_reviews = _review_quads(store)
        store.replace_graphs([DEDUP_GRAPH, DEDUP_PROVENANCE],
                             sorted(set(out_quads + old_reviews), key=str))
    return summaries


def kept_clusters(store: GraphStore, spec: DedupSpec, directory: Path, *,
                  by_name: Mapping[str, Normaliser], accept: list[tuple[str, str]],
                  reject: list[tuple[str, str]], labels: dict[str, str],
                  progress: Callable[[str], None]) -> tuple[Result, dict[str, str]]:
    """Clusters through the state kept in `directory`: only the papers it has not seen are
    harvested and clustered (`kgctl.dedup.incremental`). A paper gone from the store, other
    thresholds or other reviews: the state is built again from all papers. A paper replaced
    under the same id is not noticed (delete the directory to start again)."""
    import duckdb  # loads only when it is used

    from kgctl.dedup.incremental import State

    path = directory / f"{spec.name}.duckdb"
    papers = set(store.papers())
    try:
        directory.mkdir(parents=True, exist_ok=True)
        kept = State(path, spec.thresholds(), accept=accept, reject=reject)
        if kept.papers() - papers:
            kept.con.close()
            raise ValueError("a paper is gone")
    except ValueError:
        path.unlink(missing_ok=True)
        kept = State(path, spec.thresholds(), accept=accept, reject=reject)
    except (OSError, duckdb.Error) as exc:
        raise InputError(f"cannot keep the dedup state in {directory}: {exc}") from exc
    with kept:
        new = sorted(papers - kept.papers())
        progress(f"harvesting {spec.name} in {len(new)} new papers")
        mentions = harvest(store, spec, by_name=by_name, papers=new)
        progress(f"clustering {len(mentions)} new {spec.name} mentions")
        kept.add(mentions, papers=new)
        labels.update((iri, "; ".join(labs)) for iri, labs in kept.labels().items())
        return kept.result(), kept.paper_of()


def _review_quads(store: GraphStore) -> list[Quad]:
    """Earlier review decisions, carried over when the provenance graph is replaced."""
    rows = store.query(
        "SELECT ?d ?p ?o WHERE { GRAPH ?prov { ?d a ?type ; ?p ?o } }",
        bindings={"prov": DEDUP_PROVENANCE, "type": NamedNode(KG + "ReviewDecision")})
    return [Quad(r["d"], r["p"], r["o"], DEDUP_PROVENANCE) for r in rows]
