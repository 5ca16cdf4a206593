"""Benchmark of the agent box: evidence search, trace replay through the validating tools, and
the `kgctl demo` pipeline. Prints figures and ratios against baselines measured in the same run.

- search: median latency of an MMR top-5 query over a long paper, against plain BM25 top-5
  (the same index without diversification) as the baseline.
- replay: tool calls per second when a trace is re-issued through the MCP tools (validation +
  write), against the store's own delta replay of the same trace (no validation) as the floor.
- demo: wall time of `kgctl demo` (compile, replay, read-out and scoring, HTML report) on the
  bundled MOP-30 traces, or when none are bundled on traces the round-trip oracle makes first.

Usage: python scripts/bench_agent.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import replay_traces
from kgctl.agent.search import PassageIndex
from kgctl.assets import asset_dir
from kgctl.ontology import default_ir
from kgctl.papers.ingest import document_from_text
from kgctl.store import EmbeddedStore, canonical_nquads
from kgctl.store.trace import read_trace, replay

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "data" / "agent"
PAPER_COPIES = 40  # ~40 x 900 characters: a long paper with its SI
QUERIES = ("heated temperature days", "crystals filtered washed", "PXRD diffractometer",
           "Cu(NO3)2 DMF dissolved", "CCDC crystallographic data")
SEARCH_REPEATS = 50
K = 5


def bench_search() -> None:
    body = (SAMPLE / "paper.md").read_text(encoding="utf-8")
    text = "\n\n".join(body.replace("# ", f"# Part {i} ", 1) for i in range(PAPER_COPIES))
    doc = document_from_text("bench", text)
    started = time.perf_counter()
    index = PassageIndex(doc)
    build_ms = (time.perf_counter() - started) * 1000
    mmr, plain = [], []
    for _ in range(SEARCH_REPEATS):
        for query in QUERIES:
            t = time.perf_counter()
            index.search(query, k=K)
            mmr.append(time.perf_counter() - t)
            t = time.perf_counter()
            scores = index.relevance(query)
            [index.passages[i] for i in np.argsort(-scores, kind="stable")[:K]]
            plain.append(time.perf_counter() - t)
    m, p = statistics.median(mmr) * 1000, statistics.median(plain) * 1000
    print(f"search: {len(index.passages)} passages, {len(doc.text)} chars, index built in "
          f"{build_ms:.1f} ms")
    print(f"search: MMR top-{K} median {m:.3f} ms; BM25-only top-{K} median {p:.3f} ms; "
          f"ratio {m / p:.2f}x")


def oracle_traces(folder: Path) -> list[Path]:
    """The MOP-30 traces as the round-trip oracle makes them (what the demo bundles)."""
    from kgctl.evaluation.oracle import run_oracle

    store = EmbeddedStore(None)
    run_oracle(store, asset_dir("domains") / "mop30" / "benchmark", traces=folder)
    store.close()
    return sorted(folder.glob("*.jsonl"))


def bench_replay_and_demo() -> None:
    bundled = asset_dir("domains") / "mop30" / "benchmark" / "traces"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if bundled.is_dir() and any(bundled.glob("*.jsonl")):
            traces = sorted(bundled.glob("*.jsonl"))
            kind = "bundled MOP-30 traces"
        else:
            traces = oracle_traces(folder / "oracle")
            kind = "MOP-30 traces made now by the round-trip oracle (none bundled)"
        records = {p: read_trace(p.read_text(encoding="utf-8")) for p in traces}
        n_calls = sum(len(r) for r in records.values())

        ir = default_ir()
        tool_store = EmbeddedStore(None)
        started = time.perf_counter()
        run_sync(lambda: replay_traces(traces, ir=ir, store=tool_store))
        through_tools = time.perf_counter() - started

        delta_store = EmbeddedStore(None)
        started = time.perf_counter()
        for recs in records.values():
            replay(delta_store, recs)
        floor = time.perf_counter() - started
        same = all(canonical_nquads(tool_store, r[0].paper_id)
                   == canonical_nquads(delta_store, r[0].paper_id) for r in records.values())
        print(f"replay: {kind}: {len(traces)} papers, {n_calls} calls")
        print(f"replay: through the MCP tools {through_tools:.2f} s "
              f"({n_calls / through_tools:.0f} calls/s, "
              f"{1000 * through_tools / n_calls:.2f} ms/call); store delta replay (floor) "
              f"{floor:.2f} s; ratio {through_tools / floor:.1f}x; graphs identical: {same}")

        from click.testing import CliRunner

        from kgctl.cli import cli

        trace_dir = folder / "demo-traces"
        trace_dir.mkdir()
        for p in traces:
            (trace_dir / p.name).write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
        started = time.perf_counter()
        result = CliRunner().invoke(cli, ["demo", "--traces", str(trace_dir), "--workdir",
                                          str(folder / "demo"), "--json"])
        wall = time.perf_counter() - started
        if result.exit_code != 0:
            print(f"demo: failed: {result.output.strip()}")
            return
        data = json.loads(result.output)
        micro = data["scores"]["micro"]
        print(f"demo: {data['papers']} papers, {data['calls']} calls, {data['refused']} "
              f"refused; wall {wall:.1f} s (goal < 120 s); stages {data['seconds']}; "
              f"micro F1 {micro['f1']:.3f}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    bench_search()
    bench_replay_and_demo()
