"""Benchmark: the third-party ontology corpus (tests/ontologies) compiled with no profile.

Prints one row per ontology: declared classes, compiled tools, create tools, main classes that a
create tool makes (main: a class some property's domain or range names, or one with no loaded
super-class), axiom kinds enforced / present (kgctl.ontology.kinds) and the median compile time
(T-Box -> IR -> tools) of RUNS runs, then the bundled TWA set in the same run as the baseline.

    python scripts/bench_ontologies.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from kgctl.compiler import compile_tools
from kgctl.ontology import OntologyIR, default_ontology_paths, load_ir
from kgctl.ontology.kinds import axiom_kinds

RUNS = 3
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "ontologies"
EMMO = ("https://w3id.org/emmo/1", "https://w3id.org/emmo/domain/electrochemistry",
        "https://w3id.org/emmo/domain/chemical-substance",
        "https://w3id.org/emmo/domain/characterisation-methodology")
# name -> (file, import folders, ignored import prefixes)
ONTOLOGIES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "pizza": ("pizza/pizza.owl", (), ()),
    "sosa": ("sosa/sosa.ttl", (), ()),
    "prov-o": ("prov/prov-o.ttl", (), ()),
    "owl-time": ("time/time.ttl", (), ()),
    "iao (obo)": ("iao/iao.owl", (), ()),
    "battery": ("battery/battery.ttl", (), EMMO),
    "battery+echem": ("battery/battery.ttl", ("electrochemistry",), EMMO[:1] + EMMO[2:]),
}


def compile_once(name: str) -> tuple[OntologyIR, object]:
    path, folders, ignore = ONTOLOGIES[name]
    ir = load_ir([CORPUS / path], profile_paths=[], imports=[CORPUS / f for f in folders],
                 ignore_imports=ignore)
    return ir, compile_tools(ir)


def median_seconds(work) -> float:
    """Median CPU time of this process (the machine is shared: wall time measures the others)."""
    times = []
    for _ in range(RUNS):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main_classes(ir: OntologyIR) -> set[str]:
    own = {c for c, i in ir.classes.items() if not i.external and not i.deprecated}
    named = {c for p in ir.properties.values() if p.kind != "annotation"
             for c in (*p.domain, *p.range)}
    return {c for c in own if c in named or not own.intersection(ir.classes[c].ancestors)}


def row(name: str) -> list[str]:
    ir, surface = compile_once(name)
    seconds = median_seconds(lambda: compile_once(name))
    creates = [t for t in surface.tools if t.action == "create"]
    made = {c for t in creates for c in ((t.arg("type").classes if t.arg("type") else ())
                                         or (t.target,))}
    mains = main_classes(ir)
    present, enforced = axiom_kinds(ir)
    kinds = f"{len(enforced)} / {len(present)}"
    declared = sum(1 for i in ir.classes.values() if not i.external)
    return [name, str(declared), str(len(surface.tools)), str(len(creates)),
            f"{len(mains & made)} / {len(mains)}", kinds, f"{seconds * 1000:.0f} ms"]


def main() -> None:
    head = ["ontology", "classes", "tools", "create tools", "main classes created",
            "axiom kinds enforced / present", "compile CPU (IR+tools)"]
    rows = [row(name) for name in ONTOLOGIES]
    twa = median_seconds(lambda: compile_tools(load_ir(default_ontology_paths())))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
    print(f"baseline, same run: bundled TWA set (4 T-Boxes + profiles) IR+tools median "
          f"{twa * 1000:.0f} ms of {RUNS}")
    for name in ONTOLOGIES:
        present, enforced = axiom_kinds(compile_once(name)[0])
        listed = ", ".join(f"{k} {enforced.get(k, 0)}/{n}" for k, n in sorted(present.items()))
        print(f"{name}: {listed}")


if __name__ == "__main__":
    main()
