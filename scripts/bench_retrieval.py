"""Retrieval benchmark: dry-run overhead per construction step and the question metrics.

Runs every reference tool workflow of benchmarks/mop30-questions (the bundled set and the
chemist set, reported separately) on the 30-paper MOP graph
(--store DIR: the store `kgctl demo --workdir DIR` builds in DIR/store by replaying the bundled
traces through the extraction tools; or --data FILE.trig), and prints
the median / p90 dry-run time per committed construction step against the baseline of running
the finished query once, plus constructible share, precision-oriented overlap and F1.

    python scripts/bench_retrieval.py (--store DIR | --data FILE.trig ...) [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kgctl.ontology.loader import default_ir
from kgctl.retrieval.benchmark import Report, evaluate, load_questions, run_workflow
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.loading import open_graph

ROOT = Path(__file__).resolve().parents[1]
QUESTION_SETS = {
    "bundled": ROOT / "benchmarks" / "mop30-questions" / "questions.yaml",
    "chemist": ROOT / "benchmarks" / "mop30-questions" / "chemist-questions.yaml",
}
TARGET_MEDIAN_MS = 20.0
P90 = 0.9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--data", type=Path, action="append")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not args.store and not args.data:
        parser.error("give --store DIR (e.g. after `kgctl demo --workdir DIR`) or --data FILE")
    data = tuple(args.data or ())
    store = open_graph(args.store, data)
    t0 = time.perf_counter()
    engine = QueryEngine(store, default_ir())
    startup_ms = (time.perf_counter() - t0) * 1000
    sets = {name: load_questions(path) for name, path in QUESTION_SETS.items()}
    reports = {name: evaluate(engine, questions) for name, questions in sets.items()}
    engine.dry_run_ms.clear()
    baseline: list[float] = []
    for name, questions in sets.items():
        built = {o.id for o in reports[name].outcomes if not o.error}  # workflows that ran
        for _ in range(args.repeat):
            for q in questions:
                if q.id not in built:
                    continue
                run_workflow(engine, q)
                start = time.perf_counter()
                list(store.query(q.sparql, union=True))
                baseline.append((time.perf_counter() - start) * 1000)
    steps = sorted(engine.dry_run_ms)
    median = statistics.median(steps)
    p90 = steps[int(P90 * (len(steps) - 1))]
    base = statistics.median(baseline)
    print(f"store: {args.store or ', '.join(map(str, data))}")
    print(f"papers: {len(store.papers())}  engine start-up: {startup_ms:.1f} ms")
    verdict = "met" if median < TARGET_MEDIAN_MS else "MISSED"
    print(f"dry runs: {len(steps)} committed construction steps over {args.repeat} passes")
    print(f"dry-run per step: median {median:.3f} ms, p90 {p90:.3f} ms, max {steps[-1]:.3f} ms "
          f"(target median < {TARGET_MEDIAN_MS:.0f} ms: {verdict})")
    print(f"baseline (reference query, full run): median {base:.3f} ms; "
          f"ratio dry-run/baseline {median / base:.2f}")
    for name, report in reports.items():
        print_report(name, report)


def print_report(name: str, report: Report) -> None:
    print(f"{name} questions: {report.questions}  constructible: {report.constructible} "
          f"({report.share_constructible:.1%})")
    print(f"  execution accuracy: precision-oriented overlap {report.mean_precision:.3f}, "
          f"F1 {report.mean_f1:.3f}")
    by_level: dict[str, list[bool]] = {}
    for o in report.outcomes:
        by_level.setdefault(o.level, []).append(o.constructible)
    for level, flags in by_level.items():
        print(f"  {level:<9} {sum(flags)}/{len(flags)}")
    for qid, why in report.not_constructible.items():
        print(f"  not constructible {qid}: {why}")

if __name__ == "__main__":
    main()
