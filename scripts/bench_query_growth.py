"""Growth of every read-out query and retrieval template with the rows it returns.

For each domain pack (default: mop30 and nerre-doping) the pack's traces are replayed once
into an in-memory store and dumped as N-Quads; larger stores are bulk-loaded copies of those
quads with every paper IRI renamed (copy k of paper p is ``<p>-c<k>``: the same paper graphs
a replay of the renamed traces of `scripts/bench_scale.py`'s `make_corpus` writes; only the
provenance's call times differ). Shapes:

- union: N papers, every query run over the union of all graphs (pyoxigraph
  ``use_default_graph_as_union``, as ``kgctl serve`` and the retrieval tools read a store whose
  view hides no graph);
- one paper: one paper graph holding k renamed copies of the largest paper's facts, about
  2k / 5k / 10k / 20k triples; read-out queries run with it as the default graph (as
  ``kgctl eval`` does), templates over the union;
- stores are in memory, or on disk (RocksDB, as kgctl's store folders) with --on-disk DIR;
- with --graph-list, also the union given as a list of every named graph (what the store's
  views pass when they hide a graph, e.g. once papers are merged);
- with --one-graph, also the union's triples loaded into the default graph (growth that is the
  store's size, not its number of graphs).

Queries: every ``readout/*.rq`` of the pack (and --query files), and every retrieval template
the engine offers on the pack's data (one generated per class, the pack's ``.rq`` templates and
their ``<name>_optional`` twins), rendered as the tools run them but without a row limit. Two
anchors show the store's own growth: a scan of every triple, and the smallest join (the label
of every typed node, one index lookup per row). Each point is the best of up to five runs. The
growth exponent is the least-squares slope of log(seconds) against log(rows); linear is <= about
1.1. Queries under 10 ms at every size are below the noise floor (fixed costs and timer noise
outweigh growth). The anchors themselves grow with exponents up to about 1.4 (an index lookup
costs more as the store grows, and more again on a loaded machine), so a query is reported as
clearly above linear when its exponent is also more than 0.3 above the steeper anchor's of the
same table: a quadratic shape gives about 2. A query slower than --max-seconds is not run at
the larger sizes of that shape.

Usage: python scripts/bench_query_growth.py [--packs mop30,nerre-doping] [--sizes 30,100,300]
       [--triples 2000,5000,10000,20000] [--only NAME,...] [--query NAME=FILE]
       [--graph-list] [--one-graph] [--on-disk DIR] [--max-seconds 10]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import replay_traces
from kgctl.packs import Pack, load_pack
from kgctl.pipeline.demo import bundled_traces, compile_all
from kgctl.retrieval.commands import build_engine
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.model import SelectQuery
from kgctl.retrieval.prune import prune
from kgctl.retrieval.terms import Var
from kgctl.store import EmbeddedStore
from kgctl.store.iris import PAPER_BASE

TARGET_EXPONENT = 1.1
REPEATS = 5
REPEAT_BELOW_SECONDS = 1.0
NOISE_FLOOR = 0.01  # seconds: below it fixed costs and timer noise outweigh growth
ANCHOR_MARGIN = 0.3  # exponent above the anchor's that is clearly not the store's own growth
ANCHORS = {  # a scan, and the smallest join: one index lookup per row
    "anchor/every triple": "SELECT ?s ?p ?o WHERE { ?s ?p ?o }",
    "anchor/typed labels": "SELECT ?s ?o WHERE { ?s a ?t ; "
                           "<http://www.w3.org/2000/01/rdf-schema#label> ?o }",
}
# a paper IRI (graph, provenance graph or minted node): the id is the first path segment
PAPER = re.compile(r"(?<=<" + re.escape(PAPER_BASE) + r")([^/>]+)(?=[/>])")
PROVENANCE = "/provenance>"
GRAPH = re.compile(r" <[^>]*> \.$", re.MULTILINE)  # the graph name of an N-Quads line
UNION = {"use_default_graph_as_union": True}


def replayed(pack: Pack) -> str:
    """The pack's traces replayed into a fresh in-memory store, as N-Quads."""
    _, (ir, surface), _ = compile_all(pack=pack)
    store = EmbeddedStore()
    run_sync(lambda: replay_traces(bundled_traces(pack), ir=ir, store=store, surface=surface))
    return store.export(format=ox.RdfFormat.N_QUADS).decode("utf-8")


def by_paper(nquads: str) -> dict[str, str]:
    """{paper id: its lines (facts and provenance)}."""
    papers: dict[str, list[str]] = {}
    for line in nquads.splitlines(keepends=True):
        graph = line.rsplit("<", 1)[1]
        papers.setdefault(PAPER.search("<" + graph)[1], []).append(line)
    return {p: "".join(lines) for p, lines in papers.items()}


def union_corpus(papers: dict[str, str], size: int) -> str:
    """`size` papers: copy k of paper p renamed `<p>-c<k>` (copy 0 keeps the ids)."""
    ids = sorted(papers)
    parts = []
    for n in range(size):
        pid, copy = ids[n % len(ids)], n // len(ids)
        text = papers[pid]
        parts.append(PAPER.sub(lambda m, c=copy: f"{m[1]}-c{c}", text) if copy else text)
    return "".join(parts)


def large_paper(papers: dict[str, str], triples: int) -> tuple[str, str, int]:
    """(paper id, N-Quads, copies): the largest paper's facts copied into its own graph until
    about `triples` triples; copy k's nodes are renamed ``<paper>/k<k>/...``."""
    facts = {p: [ln for ln in text.splitlines(keepends=True) if not ln.rstrip().endswith(
        PROVENANCE + " .")] for p, text in papers.items()}
    pid = max(facts, key=lambda p: len(facts[p]))
    lines = facts[pid]
    copies = max(1, round(triples / len(lines)))
    graph = f"<{PAPER_BASE}{pid}> .\n"
    node = re.compile(r"<" + re.escape(PAPER_BASE + pid) + "/")
    out = []
    for k in range(copies):
        for line in lines:
            body = line[: -len(graph)]
            out.append(node.sub(f"<{PAPER_BASE}{pid}/k{k}/", body) + graph)
    return pid, "".join(out), copies


def loaded(nquads: str, disk: Path | None) -> ox.Store:
    """The quads bulk-loaded into a new store: in memory, or on disk in a new folder of
    `disk` (RocksDB, as kgctl's store folders), removed at the end of the run."""
    store = ox.Store(tempfile.mkdtemp(dir=disk) if disk is not None else None)
    store.bulk_load(nquads.encode("utf-8"), format=ox.RdfFormat.N_QUADS)
    store.flush()
    return store


def queries(pack: Pack, nquads: str) -> dict[str, str]:
    """{name: SPARQL}: the read-out files and the retrieval templates as the tools run them."""
    folder = pack.part("readout")
    found = {f"readout/{p.stem}": p.read_text(encoding="utf-8")
             for p in (sorted(folder.glob("*.rq")) if folder is not None else ())}
    graph = EmbeddedStore()
    graph.import_data(nquads.encode("utf-8"), format=ox.RdfFormat.N_QUADS)
    engine: QueryEngine = build_engine(graph, None, domain=str(pack.root))
    for name, t in sorted(engine.templates.items()):
        query = SelectQuery(prefixes=engine.prefixes, select=tuple(Var(name=v) for v in t.select),
                            where=t.where)
        kind = "template" if t.source == "ir" else "file"
        found[f"{kind}/{name}"] = prune(query).to_sparql()
    return found


def timed(store: ox.Store, sparql: str, options: dict) -> tuple[int, float]:
    """(rows, best seconds of up to REPEATS runs)."""
    best, rows = math.inf, 0
    for _ in range(REPEATS):
        started = time.perf_counter()
        rows = sum(1 for _ in store.query(sparql, **options))
        best = min(best, time.perf_counter() - started)
        if best > REPEAT_BELOW_SECONDS:
            break
    return rows, best


def exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(seconds) against log(rows) over the points with rows."""
    xy = [(math.log(r), math.log(t)) for r, t in points if r > 0 and t > 0]
    if len(xy) < 2 or xy[-1][0] <= xy[0][0]:
        return None
    mx, my = sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy)
    return (sum((x - mx) * (y - my) for x, y in xy) / sum((x - mx) ** 2 for x, _ in xy))


def measure(title: str, stores: list[tuple[str, ox.Store, dict, dict]],
            named: dict[str, str], max_seconds: float, *, anchors: dict | None = None
            ) -> list[str]:
    """One table: a row per query, a (rows, seconds) column per store (options of the read-out
    queries, of the templates; the anchors' are the read-out's unless given). Returns the queries
    whose exponent is above the target at NOISE_FLOOR or more, and more than ANCHOR_MARGIN
    above the steeper anchor's (the store's own growth in the same run)."""
    print(f"\n{title}")
    head = "".join(f"{label:>24}" for label, *_ in stores)
    print(f"{'query':<36}{head}  exponent")
    above, empty, anchor = [], [], None
    for name, sparql in named.items():
        points: list[tuple[int, float]] = []
        cells = []
        for _label, store, fixed, tools in stores:
            if points and points[-1][1] > max_seconds:
                cells.append(f"{'(skipped)':>24}")
                continue
            options = (tools if name.startswith(("template/", "file/")) else anchors
                       if anchors is not None and name.startswith("anchor/") else fixed)
            rows, seconds = timed(store, sparql, options)
            points.append((rows, seconds))
            cells.append(f"{rows:>10} r {seconds:>9.4f} s")
        if not any(r for r, _ in points):
            empty.append(name)
            continue
        e = exponent(points)
        if name.startswith("anchor/") and e is not None:
            anchor = e if anchor is None else max(anchor, e)
        flag = ""
        if e is not None and e > TARGET_EXPONENT and not name.startswith("anchor/"):
            flag = "  (below the noise floor)"
            if max(t for _, t in points) >= NOISE_FLOOR:
                flag = "  above target"
                above.append((name, e))
        print(f"{name:<36}{''.join(cells)}  {'-' if e is None else f'{e:.2f}'}{flag}",
              flush=True)
    if empty:
        print(f"no rows at any size ({len(empty)}): {', '.join(empty)}")
    steep = [n for n, e in above if anchor is None or e > anchor + ANCHOR_MARGIN]
    print(f"steeper anchor {'-' if anchor is None else f'{anchor:.2f}'}; above "
          f"{TARGET_EXPONENT}: {len(above)}; more than {ANCHOR_MARGIN} above the anchor: "
          f"{', '.join(steep) or 'none'}")
    return steep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packs", default="mop30,nerre-doping")
    parser.add_argument("--sizes", default="30,100,300", help="papers in the union")
    parser.add_argument("--triples", default="2000,5000,10000,20000",
                        help="triples of the one large paper (empty: not measured)")
    parser.add_argument("--only", default="", help="query names (e.g. readout/steps) to run")
    parser.add_argument("--max-seconds", type=float, default=10.0)
    parser.add_argument("--query", action="append", default=[], metavar="NAME=FILE",
                        help="also measure this .rq file, run like a read-out query "
                             "(e.g. an older or a rewritten form)")
    parser.add_argument("--graph-list", action="store_true",
                        help="also run over every named graph given as a list (the store's "
                             "views pass one when they hide a graph)")
    parser.add_argument("--one-graph", action="store_true",
                        help="also run over the union's triples loaded into the default graph")
    parser.add_argument("--on-disk", type=Path, metavar="DIR",
                        help="stores on disk in new folders of DIR (default: in memory)")
    args = parser.parse_args()
    disk = Path(tempfile.mkdtemp(dir=args.on_disk)) if args.on_disk else None
    sizes = [int(s) for s in args.sizes.split(",")]
    targets = [int(s) for s in args.triples.split(",") if s]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"pyoxigraph {ox.__version__}")
    steep = []
    for name in args.packs.split(","):
        pack = load_pack(name)
        started = time.perf_counter()
        base = replayed(pack)
        papers = by_paper(base)
        named = {**ANCHORS, **queries(pack, base),
                 **{f"readout/{n}": Path(f).read_text(encoding="utf-8")
                    for n, _, f in (q.partition("=") for q in args.query)}}
        if args.only:
            named = {q: s for q, s in named.items() if q in args.only.split(",")}
        print(f"\n== {pack.name}: {len(papers)} papers replayed in "
              f"{time.perf_counter() - started:.1f} s, {len(named)} queries")
        stores = [(f"{size} papers", loaded(union_corpus(papers, size), disk)) for size in sizes]
        quads = ", ".join(str(len(s)) for _, s in stores)
        steep += measure(f"union of N papers ({quads} quads)",
                         [(label, s, UNION, UNION) for label, s in stores],
                         named, args.max_seconds)
        if args.graph_list:
            listed = [(label, s, {"default_graph": list(s.named_graphs())}) for label, s in stores]
            steep += measure("every named graph given as the default graph (a list; the "
                             "anchors by union)",
                             [(label, s, o, o) for label, s, o in listed], named,
                             args.max_seconds, anchors=UNION)
        if args.one_graph:
            flat = [(label, loaded(GRAPH.sub(" .", union_corpus(papers, size)), disk))
                    for (label, _), size in zip(stores, sizes, strict=True)]
            steep += measure("the same triples in the default graph",
                             [(label, s, {}, {}) for label, s in flat], named,
                             args.max_seconds)
        del stores
        if targets:
            big = [large_paper(papers, target) for target in targets]
            pid, _, copies = big[-1]
            print(f"\none paper: {pid}, its facts copied up to {copies} times")
            graph = {"default_graph": ox.NamedNode(PAPER_BASE + pid)}
            steep += measure("one large paper (read-out: its graph as the default graph; "
                             "templates: the union)",
                             [(f"{text.count(chr(10))} triples", loaded(text, disk), graph, UNION)
                              for _, text, _ in big], named, args.max_seconds)
    if disk is not None:
        shutil.rmtree(disk)
    print(f"\nclearly above linear (exponent above {TARGET_EXPONENT} at {NOISE_FLOOR} s or "
          f"more, and more than {ANCHOR_MARGIN} above the anchor): {', '.join(steep) or 'none'}")


if __name__ == "__main__":
    main()
