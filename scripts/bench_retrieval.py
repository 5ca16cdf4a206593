"""Retrieval benchmark: dry-run overhead per construction step and the question metrics.

Runs every reference tool workflow of the bundled question sets and prints, per set, the share
of questions whose workflow answer equals the reference SPARQL answer, precision-oriented overlap
and F1, and the median / p90 dry-run time per committed construction step against the run time
of the finished reference queries.

- ``mop30`` (the bundled and chemist sets of the mop30 pack's questions) on the 30-paper MOP
  graph: --store DIR (the store `kgctl demo --workdir DIR` builds in DIR/store) or
  --data FILE.trig; skipped when neither is given.
- ``sosa`` (benchmarks/sosa-questions) on the W3C SOSA example graph shipped beside it, with the
  SOSA and OWL-Time T-Boxes and no template files.
- any other set: --questions FILE.yaml --graph-data FILE... [--ontology FILE...].

    python scripts/bench_retrieval.py [--store DIR | --data FILE.trig] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kgctl.ontology.loader import default_ir, load_ir
from kgctl.packs import load_pack
from kgctl.retrieval.benchmark import Report, evaluate, load_questions, run_workflow
from kgctl.retrieval.commands import build_engine
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.loading import open_graph

ROOT = Path(__file__).resolve().parents[1]
MOP30 = ROOT / "domains" / "mop30" / "questions"
SOSA = ROOT / "benchmarks" / "sosa-questions"
SOSA_TBOX = [ROOT / "tests" / "ontologies" / "sosa" / "sosa.ttl",
             ROOT / "tests" / "ontologies" / "time" / "time.ttl"]
TARGET_MEDIAN_MS = 10.0
P90 = 0.9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="the MOP-30 store")
    parser.add_argument("--data", type=Path, action="append", help="the MOP-30 graph as TriG")
    parser.add_argument("--questions", type=Path, help="another question set (YAML)")
    parser.add_argument("--graph-data", type=Path, action="append", help="its data files")
    parser.add_argument("--ontology", type=Path, action="append", help="its T-Box files")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs = []
    if args.store or args.data:
        graph = open_graph(args.store, tuple(args.data or ()))
        runs.append(("mop30", graph, QueryEngine(graph, default_ir(),
                                                 templates=load_pack().part("templates")),
                     {"bundled": MOP30 / "questions.yaml",
                      "chemist": MOP30 / "chemist-questions.yaml"}))
    else:
        print("mop30: skipped (give --store DIR or --data FILE.trig)")
    graph = open_graph(None, tuple(sorted((SOSA / "data").glob("*.ttl"))))
    runs.append(("sosa", graph, QueryEngine(graph, load_ir(SOSA_TBOX, profile_paths=[]),
                                            templates=None),
                 {"sosa": SOSA / "questions.yaml"}))
    if args.questions:  # as `kgctl query serve --data F... [--ontology O... --no-profile]`
        files = tuple(args.graph_data or ())
        graph = open_graph(None, files)
        ir = load_ir(args.ontology, profile_paths=[]) if args.ontology else None
        runs.append(("other", graph, build_engine(graph, ir, data=files),
                     {args.questions.stem: args.questions}))
    for name, graph, engine, sets in runs:
        measure(name, graph, engine, sets, repeat=args.repeat)


def measure(name: str, graph, engine: QueryEngine, files: dict[str, Path], *,
            repeat: int) -> None:
    sets = {label: load_questions(path) for label, path in files.items()}
    reports = {label: evaluate(engine, questions) for label, questions in sets.items()}
    engine.dry_run_ms.clear()
    baseline: list[float] = []
    for label, questions in sets.items():
        built = {o.id for o in reports[label].outcomes if not o.error}  # workflows that ran
        for _ in range(repeat):
            for q in questions:
                if q.id not in built:
                    continue
                run_workflow(engine, q)
                start = time.perf_counter()
                list(graph.query(q.sparql, union=True))
                baseline.append((time.perf_counter() - start) * 1000)
    steps = sorted(engine.dry_run_ms)
    median = statistics.median(steps)
    p90 = steps[int(P90 * (len(steps) - 1))]
    base = statistics.median(baseline)
    verdict = "met" if median < TARGET_MEDIAN_MS else "MISSED"
    print(f"== {name}: {sum(len(q) for q in sets.values())} questions")
    print(f"dry runs: {len(steps)} committed construction steps over {repeat} passes")
    print(f"dry-run per step: median {median:.3f} ms, p90 {p90:.3f} ms, max {steps[-1]:.3f} ms "
          f"(target median < {TARGET_MEDIAN_MS:.0f} ms: {verdict})")
    print(f"baseline (reference query, full run): median {base:.3f} ms; "
          f"ratio dry-run/baseline {median / base:.2f}")
    for label, report in reports.items():
        print_report(label, report)


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
