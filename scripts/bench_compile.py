"""Benchmark: compiling the four bundled TWA T-Boxes + profiles into the IR, and into tools.

Prints the median of RUNS full compiles (target < 1 s) against baselines measured in the same
run: loading the same files into a pyoxigraph Store, and parsing them with rdflib (if installed).
Then the same T-Box -> IR -> tools pipeline on the largest ontology of the test corpus (EMMO
battery + electrochemistry domains, 1,291 classes; goal well under 2 s), in CPU seconds as the
machine is shared.

    python scripts/bench_compile.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from kgctl.compiler import compile_tools
from kgctl.ontology import default_ontology_paths, load_ir

RUNS = 10
TARGET_S = 1.0
LARGE_TARGET_S = 2.0
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "ontologies"
EMMO_CORE = ("https://w3id.org/emmo/1", "https://w3id.org/emmo/domain/chemical-substance",
             "https://w3id.org/emmo/domain/characterisation-methodology")


def median_seconds(work: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_ir() -> object:
    return load_ir(default_ontology_paths()).to_json()


def compile_twa_tools() -> object:
    return compile_tools(load_ir(default_ontology_paths()))


def compile_largest() -> object:
    ir = load_ir([CORPUS / "battery" / "battery.ttl"], profile_paths=[],
                 imports=[CORPUS / "electrochemistry"], ignore_imports=EMMO_CORE)
    return ir, compile_tools(ir)


def median_cpu(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


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
    tools = median_seconds(compile_twa_tools)
    print(f"compile 4 TWA T-Boxes + profiles -> IR -> tools: median {tools * 1000:.1f} ms "
          f"(target < {TARGET_S * 1000:.0f} ms: {'ok' if tools < TARGET_S else 'MISSED'})")
    ir, surface = compile_largest()
    classes = sum(1 for info in ir.classes.values() if not info.external)
    large = median_cpu(compile_largest, 3)
    twa_cpu = median_cpu(compile_twa_tools, 3)
    verdict = "ok" if large < LARGE_TARGET_S else "MISSED"
    print(f"largest corpus ontology (battery + electrochemistry, {classes} classes, "
          f"{len(surface.tools)} tools) -> IR -> tools: median {large * 1000:.0f} ms CPU "
          f"(goal < {LARGE_TARGET_S * 1000:.0f} ms: {verdict}; "
          f"TWA set in the same run {twa_cpu * 1000:.0f} ms CPU, {large / twa_cpu:.1f}x)")
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
