"""Deduplication on the MOP-30 graphs built by replaying the bundled round-trip traces.

Prints, per spec, mentions / clusters / cross-paper clusters; the share of chemical names used
in more than one paper whose mentions all end in one cluster (and the names that do not, with
the reason); merge precision on the hand-labelled pair sample in tests/data/dedup_labelled.csv;
and a check that no cluster holds two values of a conflict key. Baseline in the same run:
grouping mentions by their exact lower-cased first label.

    python scripts/bench_dedup_mop30.py [--engine memory|duckdb]
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import defaultdict
from pathlib import Path

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import replay_traces
from kgctl.dedup.job import DEDUP_GRAPH, ENGINES, SAME_AS, harvest, run
from kgctl.dedup.keys import is_fragment, name_key
from kgctl.dedup.spec import pack_specs
from kgctl.pipeline.demo import bundled_traces, compile_all
from kgctl.store import EmbeddedStore

LABELLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "dedup_labelled.csv"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=ENGINES, default="auto")
    engine = parser.parse_args().engine
    store = EmbeddedStore()
    _, (ir, surface), _ = compile_all()
    run_sync(lambda: replay_traces(bundled_traces(), ir=ir, store=store, surface=surface))
    specs = pack_specs(None)
    started = time.perf_counter()
    summaries = run(store, specs, engine=engine)
    seconds = time.perf_counter() - started
    link = {r["m"].value: r["c"].value for r in store.query(
        "SELECT ?m ?c WHERE { GRAPH ?g { ?m ?same ?c } }",
        bindings={"g": DEDUP_GRAPH, "same": SAME_AS})}
    print(f"dedup of {len(store.papers())} papers in {seconds:.2f} s")
    for s in summaries:
        print(f"  {s.spec:9} {s.mentions:5} mentions -> {s.clusters:4} clusters, "
              f"{s.cross_paper_clusters:3} across papers, {s.grey} grey, {s.refused} refused")

    for spec in specs:
        mentions = harvest(store, spec)
        if spec.name == "chemical":
            papers_of: dict[str, set[str]] = defaultdict(set)
            clusters_of: dict[str, set[str]] = defaultdict(set)
            baseline: dict[str, set[str]] = defaultdict(set)
            for m in mentions:
                for label in m.labels:
                    if not is_fragment(label):
                        papers_of[name_key(label)].add(m.paper)
                        clusters_of[name_key(label)].add(link[m.iri])
                if m.labels:
                    baseline[m.labels[0].lower()].add(m.iri)
            shared = sorted(n for n, p in papers_of.items() if len(p) > 1)
            whole = [n for n in shared if len(clusters_of[n]) == 1]
            print(f"chemical names used in >1 paper: {len(shared)}; in one cluster: {len(whole)} "
                  f"({len(whole) / len(shared):.3f}); baseline exact-label groups: "
                  f"{len(baseline)} vs dedup clusters "
                  f"{next(s.clusters for s in summaries if s.spec == 'chemical')}")
            for name in sorted(set(shared) - set(whole)):
                print(f"    split: {name!r} in {len(clusters_of[name])} clusters")
        conflicts = 0
        members: dict[str, list] = defaultdict(list)
        for m in mentions:
            members[link[m.iri]].append(m)
        kinds = spec.thresholds().conflict_keys
        for group in members.values():
            for kind in kinds:
                if len({v for m in group for k, v in m.keys if k == kind}) > 1:
                    conflicts += 1
        print(f"  {spec.name}: clusters with conflicting identifiers: {conflicts}")

    rows = list(csv.DictReader(LABELLED.open(encoding="utf-8")))
    merged = [r for r in rows if link.get(r["a"]) and link.get(r["a"]) == link.get(r["b"])]
    correct = sum(r["same"] == "yes" for r in merged)
    negatives = [r for r in rows if r["same"] == "no"]
    print(f"labelled sample: {len(rows)} pairs ({len(negatives)} different); merged {len(merged)}, "
          f"of which correct {correct}: precision {correct / len(merged):.3f}; "
          f"different pairs merged: {sum(r in merged for r in negatives)}")


if __name__ == "__main__":
    main()
