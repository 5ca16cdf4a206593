"""Benchmark: read-out + scoring of all 30 MOP-30 papers from an embedded store.

The store holds the 30 paper graphs rebuilt by replaying the bundled MOP-30 traces through the
extraction tools (tests/evaluation_helpers.py; replay is not timed). Baseline measured in the
same run: scoring the gold records against themselves (no store, no SPARQL).
Run: python scripts/bench_eval.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from evaluation_helpers import replayed_store  # noqa: E402

from kgctl.evaluation.loader import load_benchmark  # noqa: E402
from kgctl.evaluation.readout import read_out_loaded  # noqa: E402
from kgctl.evaluation.report import score  # noqa: E402

TARGET_SECONDS = 5.0


def main() -> None:
    gold = load_benchmark(ROOT / "domains" / "mop30" / "benchmark")
    store = replayed_store()
    n_triples = sum(1 for p in store.papers() for _ in store.triples(p))

    start = time.perf_counter()
    score(gold, gold)
    baseline = time.perf_counter() - start

    start = time.perf_counter()
    pred = read_out_loaded(store, sorted(gold.docs))
    read_time = time.perf_counter() - start
    report = score(gold, pred)
    total = time.perf_counter() - start

    print(f"store: {len(store.papers())} papers replayed from their traces, {n_triples} "
          "triples (embedded, in memory)")
    print(f"read-out {read_time:.2f} s + scoring {total - read_time:.2f} s = {total:.2f} s "
          f"(target < {TARGET_SECONDS} s: {'ok' if total < TARGET_SECONDS else 'MISSED'})")
    print(f"baseline gold-vs-gold scoring {baseline:.2f} s; ratio total/baseline "
          f"{total / baseline:.1f}x")
    cats = " ".join(f"{c} {n.f1:.4f}" for c, n in report.categories.items())
    print(f"micro F1 {report.micro.f1:.4f}; per category: {cats}")


if __name__ == "__main__":
    main()
