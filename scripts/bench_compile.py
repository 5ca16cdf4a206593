"""Benchmark: compiling the four bundled TWA T-Boxes + profiles into the IR.

Prints the median of RUNS full compiles (target < 1 s) against baselines measured in the same
run: loading the same files into a pyoxigraph Store, and parsing them with rdflib (if installed).

    python scripts/bench_compile.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pyoxigraph as ox

from kgctl.ontology import default_ontology_paths, load_ir

RUNS = 10
TARGET_S = 1.0


def median_seconds(work: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_ir() -> object:
    return load_ir(default_ontology_paths()).to_json()


def load_store() -> object:
    store = ox.Store()
    for path in default_ontology_paths():
        store.load(path=str(path), format=ox.RdfFormat.TURTLE)
    return store


def rdflib_parse() -> object:
    import rdflib

    graph = rdflib.Graph()
    for path in default_ontology_paths():
        graph.parse(str(path), format="turtle")
    return graph


def main() -> None:
    compile_ir()  # warm imports and caches outside the timed runs
    compiled = median_seconds(compile_ir)
    store = median_seconds(load_store)
    verdict = "ok" if compiled < TARGET_S else "MISSED"
    print(f"compile 4 TWA T-Boxes + profiles -> IR JSON: median {compiled * 1000:.1f} ms "
          f"of {RUNS} (target < {TARGET_S * 1000:.0f} ms: {verdict})")
    print(f"baseline pyoxigraph Store load of the same files: median {store * 1000:.1f} ms "
          f"(compile / load = {compiled / store:.1f}x)")
    try:
        import rdflib  # noqa: F401
    except ImportError:
        print("baseline rdflib parse: skipped (rdflib not installed)")
        return
    parsed = median_seconds(rdflib_parse)
    print(f"baseline rdflib parse of the same files: median {parsed * 1000:.1f} ms "
          f"(compile / rdflib parse = {compiled / parsed:.2f}x)")


if __name__ == "__main__":
    main()
