"""Benchmark: every store stage on the embedded store, the Oxigraph server and Virtuoso 7.

One run starts `oxigraph serve` and Virtuoso (Debian `virtuoso-opensource`, its own ini in a
temporary folder, loopback ports, Digest auth, default ResultSetMaxRows 10,000) and runs on each:
- write: the 30 MOP-30 papers written through the compiled tools (replay of the bundled traces);
- eval run: read-out of the 30 papers with the fixed queries + scoring (micro F1);
- replay: every paper rebuilt from its store trace (stage-and-swap on the servers);
- import/export: whole-store TriG export, every paper dropped, the export imported again;
- dedup: the cross-paper dedup job (harvest, cluster, write the dedup graph; compared: the
  dedup graph and its provenance graph);
- ground: grounding of every paper's species against the reference slice, `--mode rewrite`
  (compared: every paper graph and trace);
- query run: one retrieval query over the union of all papers;
- harvest: grounding label rows of a reference slice (REF_SPECIES species from the `chemicals`
  tables, more subjects than Virtuoso's row cap), loaded into each server after the paper
  stages (untimed); an embedded reference store for the baseline.
Every stage's result is compared with the embedded store's. Ratios are against the embedded
store and Virtuoso against the Oxigraph server.
Run: python scripts/bench_backends.py [--papers N] [--species N]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from evaluation_helpers import replay_into, traces_by_paper  # noqa: E402
from pyoxigraph import NamedNode, Quad  # noqa: E402
from store_helpers import OxigraphServer  # noqa: E402
from virtuoso_helpers import VirtuosoServer, missing_reason  # noqa: E402

from kgctl.chemistry.reference import build_reference, read_rows, species_quads, table_paths  # noqa: E402,E501
from kgctl.dedup.job import DEDUP_GRAPH, DEDUP_PROVENANCE  # noqa: E402
from kgctl.dedup.job import run as dedup_run  # noqa: E402
from kgctl.dedup.spec import pack_specs  # noqa: E402
from kgctl.evaluation.loader import Loaded, load_benchmark  # noqa: E402
from kgctl.evaluation.readout import read_out_loaded  # noqa: E402
from kgctl.evaluation.report import score  # noqa: E402
from kgctl.grounding.commands import load_matcher  # noqa: E402
from kgctl.grounding.harvest import harvest_rows  # noqa: E402
from kgctl.grounding.materialise import materialise  # noqa: E402
from kgctl.grounding.sources import EmbeddedSource, EndpointSource, SparqlSource  # noqa: E402,E501
from kgctl.grounding.spec import load_spec  # noqa: E402
from kgctl.store import EmbeddedStore, canonical_nquads, open_store  # noqa: E402
from kgctl.store.base import GraphStore  # noqa: E402
from kgctl.store.canonical import canonical_text  # noqa: E402
from kgctl.store.sparql import data_update  # noqa: E402
from kgctl.store.staging import batches  # noqa: E402
from kgctl.store.trace import replay  # noqa: E402

REF_SPECIES = 10_500
REFERENCE_GRAPH = NamedNode("https://w3id.org/kgctl/reference")
UNION_QUERY = """SELECT ?type (COUNT(?s) AS ?n) WHERE {
  ?s a ?type FILTER(STRSTARTS(STR(?s), "https://w3id.org/kgctl/paper/")) }
GROUP BY ?type ORDER BY DESC(?n) ?type"""


def timed(label: str, action: Callable[[], object],
          result: Callable[[object], object] = lambda value: value) -> tuple[float, object]:
    """(seconds of `action`, `result` of its value: the comparable outcome, read untimed)."""
    start = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - start
    print(f"  {label} {seconds:.2f} s", file=sys.stderr, flush=True)
    return seconds, result(value)


def canonical_all(store: GraphStore) -> dict[str, tuple]:
    """Each paper's graph and trace (call times differ from run to run and are left out)."""
    return {p: (canonical_nquads(store, p),
                [r.model_copy(update={"time": ""}) for r in store.trace(p)])
            for p in store.papers()}


def canonical_graph(store: GraphStore, graph: NamedNode) -> str:
    rows = store.query("SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }", bindings={"g": graph})
    return canonical_text([Quad(r["s"], r["p"], r["o"], graph) for r in rows])


def stages(store: GraphStore, papers: list[str], load_source: Callable[[], SparqlSource],
           work: Path, matcher: tuple) -> dict[str, tuple]:
    """(seconds, comparable result) per stage."""
    gold = load_benchmark(ROOT / "domains" / "mop30" / "benchmark")
    out: dict[str, tuple] = {}
    out["write"] = timed("write", lambda: replay_into(store, papers),
                         lambda _: canonical_all(store))

    def evaluate() -> float:
        docs = {}
        for paper in papers:  # as `kgctl eval run` does: one paper at a time
            docs.update(read_out_loaded(store, [paper]).docs)
        part = Loaded(docs={p: gold.docs[p] for p in papers}, problems=())
        return round(score(part, Loaded(docs=docs, problems=())).micro.f1, 6)
    out["eval run"] = timed("eval run", evaluate)

    def replay_all() -> None:
        for paper in papers:
            replay(store, store.trace(paper))
    out["replay"] = timed("replay", replay_all, lambda _: canonical_all(store))

    def round_trip() -> None:
        data = store.export()
        for paper in store.papers():
            store.drop(paper)
        store.import_data(data)
    out["import/export"] = timed("import/export", round_trip, lambda _: canonical_all(store))

    def dedup() -> tuple:
        summaries = dedup_run(store, pack_specs(None))
        return ([(s.spec, s.mentions, s.clusters, s.merges) for s in summaries],
                [canonical_graph(store, g) for g in (DEDUP_GRAPH, DEDUP_PROVENANCE)])
    out["dedup"] = timed("dedup", dedup)
    out["ground"] = timed("ground", lambda: materialise(store, *matcher, papers, mode="rewrite"),
                          lambda decisions: ([d.written for d in decisions],
                                             canonical_all(store)))

    out["query run"] = timed("query run", lambda: [
        (r["type"].value, int(r["n"].value)) for r in store.query(UNION_QUERY, union=True)])

    source = load_source()  # the reference slice, loaded untimed after the paper stages
    spec = load_spec("species")
    work.mkdir(parents=True, exist_ok=True)
    out["harvest"] = timed("harvest", lambda: harvest_rows(
        source, spec, partial=work / "harvest.partial"), lambda rows: sorted(map(tuple, rows)))
    return out


def load_reference(store: GraphStore, quads: list, *, named: bool) -> None:
    """Into the default graph, or (Virtuoso: no plain default graph to write to, and queries
    without a dataset read the union of all graphs) into a named graph."""
    if named:
        quads = [Quad(q.subject, q.predicate, q.object, REFERENCE_GRAPH) for q in quads]
    for part in batches(quads, max_quads=store.settings.max_quads,
                        max_bytes=store.settings.max_bytes):
        store.update(data_update(insert=part))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--papers", type=int, default=30)
    parser.add_argument("--species", type=int, default=REF_SPECIES)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    papers = sorted(traces_by_paper())[: args.papers]
    rows = list(read_rows(table_paths(), limit=args.species))
    reference = [q for row in rows for q in species_quads(row)]
    results: dict[str, dict[str, tuple]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        build_reference(work / "reference", rows)
        matcher = load_matcher("Species", endpoint=None, reference=work / "reference",
                               cache_dir=work / "cache", refresh=False)
        print("embedded", file=sys.stderr, flush=True)
        results["embedded"] = stages(EmbeddedStore(work / "embedded"), papers,
                                     lambda: EmbeddedSource(work / "reference"), work / "e",
                                     matcher)
        servers = [("oxigraph server", OxigraphServer(work / "oxigraph"))]
        if missing_reason() is None:
            servers.append(("virtuoso", VirtuosoServer(work / "virtuoso")))
        else:
            print(f"virtuoso skipped: {missing_reason()}")
        for name, server in servers:
            try:
                os.environ.update(getattr(server, "env", dict)())
                store = open_store(endpoint=server.url)

                def load_source(store=store, server=server, name=name) -> SparqlSource:
                    for paper in store.papers():  # Virtuoso's default graph is every graph:
                        store.drop(paper)  # the papers' own species would join the harvest
                    load_reference(store, reference, named=name == "virtuoso")
                    return EndpointSource(getattr(server, "public_url", server.url))
                print(name, file=sys.stderr, flush=True)
                results[name] = stages(store, papers, load_source, work / name, matcher)
                store.close()
            finally:
                server.stop()
    base = results["embedded"]
    print(f"{len(papers)} papers, reference slice {len(rows)} species "
          f"({len(reference)} quads)")
    print(f"{'stage':<14}" + "".join(f"{n:>24}" for n in results)
          + ("   virtuoso/oxigraph" if "virtuoso" in results else ""))
    for stage in base:
        line = f"{stage:<14}"
        for res in results.values():
            seconds, same = res[stage][0], res[stage][1] == base[stage][1]
            ratio = seconds / base[stage][0]
            line += f"{seconds:>9.2f} s {ratio:>5.1f}x {'same' if same else 'DIFF'}"
        if "virtuoso" in results:
            virtuoso, oxigraph = results["virtuoso"][stage][0], results["oxigraph server"][stage][0]
            line += f"   {virtuoso / oxigraph:.2f}x"
        print(line)
    print("(x: wall time against embedded; same/DIFF: result identical to embedded)")
    print("eval micro F1: " + ", ".join(f"{n} {r['eval run'][1]}" for n, r in results.items()))


if __name__ == "__main__":
    main()
