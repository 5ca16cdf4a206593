"""Benchmark: the third-party ontology corpus (tests/ontologies) compiled with no profile.

Prints one row per ontology: declared classes, compiled tools and surface ("per-class" tools or
the "bounded" create_entity surface), tokens of the whole listing and of the largest plan step
per turn (verification pass included, `kgctl.compiler.budget`), the median CPU time of RUNS
compiles (T-Box -> IR -> tools -> plan, after one warm-up that loads the tokenizer), the wall
and CPU time from `initialize` to the answer of `tools/list` in a real MCP client session (the
server compiles in the background; wall time on a shared machine measures the others too),
and how many classes that session created: one instance of every class that is not deprecated
nor defined by `owl:oneOf` (exactly its individuals), each through the tools the listing
offers (a per-class create tool whose target or `type` picks it, else `create_entity`), no
argument but a label. Then the axiom kinds enforced / present, and the bundled TWA set in the
same run as the baseline.

    python scripts/bench_ontologies.py
"""

from __future__ import annotations

import functools
import statistics
import time
from pathlib import Path

import anyio
from mcp import Client

from kgctl.compiler import compile_tools
from kgctl.compiler.budget import plan_budget
from kgctl.compiler.plan import compile_plan
from kgctl.instantiation.server import build_server
from kgctl.ontology import OntologyIR, default_ontology_paths, load_ir
from kgctl.ontology.kinds import axiom_kinds
from kgctl.store import EmbeddedStore

RUNS = 3
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "ontologies"
EMMO = ("https://w3id.org/emmo/1", "https://w3id.org/emmo/domain/electrochemistry",
        "https://w3id.org/emmo/domain/chemical-substance",
        "https://w3id.org/emmo/domain/characterisation-methodology")
SKOS = ("http://www.w3.org/2004/02/skos/core",)
# name -> (file, import folders, ignored import prefixes)
ONTOLOGIES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "pizza": ("pizza/pizza.owl", (), ()),
    "sosa": ("sosa/sosa.ttl", (), ()),
    "prov-o": ("prov/prov-o.ttl", (), ()),
    "owl-time": ("time/time.ttl", (), ()),
    "iao (obo)": ("iao/iao.owl", (), ()),
    "battery": ("battery/battery.ttl", (), EMMO),
    "battery+echem": ("battery/battery.ttl", ("electrochemistry",), EMMO[:1] + EMMO[2:]),
    "doremus+efrbroo+crm": ("doremus/doremus.ttl", (), SKOS),
    "sio": ("sio/sio.owl", (), ()),
    "odrl": ("odrl/ODRL22.ttl", (), ()),
}


def load(name: str) -> OntologyIR:
    path, folders, ignore = ONTOLOGIES[name]
    return load_ir([CORPUS / path], profile_paths=[], imports=[CORPUS / f for f in folders],
                   ignore_imports=ignore)


def compile_once(name: str) -> None:
    ir = load(name)
    compile_plan(ir, surface=compile_tools(ir))


def median_seconds(work) -> float:
    """Median CPU time of this process (the machine is shared: wall time measures the others)."""
    work()  # warm-up: the tokenizer's ranks load once per process
    times = []
    for _ in range(RUNS):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def creation_calls(ir: OntologyIR) -> dict[str, tuple[str, dict]]:
    """Class -> the call that creates one of it with the compiled tools: `create_entity` on
    the bounded surface, else the create tool whose target is the class or whose `type`
    argument picks it."""
    surface = compile_tools(ir)
    calls: dict[str, tuple[str, dict]] = {}
    for tool in surface.tools:
        kinds = tool.arg("type")
        if tool.action != "create":
            continue
        if kinds is not None and not kinds.classes:  # create_entity: any class
            return {c: (tool.name, {"type": ir.curie(c), "label": f"a {i.label}"})
                    for c, i in ir.classes.items()}
        picks = zip(kinds.enum, kinds.classes, strict=True) if kinds else [(None, tool.target)]
        for word, cls in picks:
            args = {"label": f"a {ir.classes[cls].label}"}
            calls.setdefault(cls, (tool.name, {**args, "type": word} if word else args))
    return calls


def session(ir_factory, classes: list[str]) -> tuple[float, float, int]:
    """(wall and CPU seconds from initialize to the tools/list answer, classes created) in
    one session (client and server in this process: the CPU time is both)."""
    out: list[float | int] = []

    async def main() -> None:
        start, cpu = time.perf_counter(), time.process_time()
        async with Client(build_server(ir_factory, EmbeddedStore(), paper_id="bench")) as client:
            listed = (await client.list_tools()).tools
            out.extend([time.perf_counter() - start, time.process_time() - cpu])
            calls = creation_calls(ir_factory())
            made = 0
            for cls in classes:
                call = calls.get(cls)
                if call is not None and call[0] in {t.name for t in listed}:
                    result = await client.call_tool(*call)
                    made += not result.is_error
            out.append(made)

    anyio.run(main)
    return float(out[0]), float(out[1]), int(out[2])


def row(name: str) -> list[str]:
    ir = load(name)
    surface = compile_tools(ir)
    report = plan_budget(compile_plan(ir, surface=surface), surface)
    seconds = median_seconds(lambda: compile_once(name))
    # owl:oneOf classes are exactly their individuals: no instance is created
    classes = [c for c, i in ir.classes.items()
               if not i.external and not i.deprecated and not i.one_of]
    wall, cpu, made = session(functools.cache(lambda: load(name)), classes)  # a fresh compile
    worst = max(max(s.per_turn, s.verify_per_turn) for s in report.steps)
    present, enforced = axiom_kinds(ir)
    return [name, str(len(classes)), str(len(surface.tools)),
            "bounded" if surface.groups else "per-class", f"{report.surface_tokens:,}",
            f"{worst:,}", f"{seconds * 1000:.0f} ms", f"{wall:.2f} s (CPU {cpu:.2f} s)",
            f"{made} / {len(classes)} ({100 * made / max(len(classes), 1):.0f}%)",
            f"{len(enforced)} / {len(present)}"]


def main() -> None:
    head = ["ontology", "classes", "tools", "surface", "listing tokens", "max step/turn",
            "compile CPU", "tools/list after init (wall, CPU)", "classes created",
            "axiom kinds enf/pres"]
    rows = [row(name) for name in ONTOLOGIES]
    twa = median_seconds(lambda: compile_plan(ir := load_ir(default_ontology_paths()),
                                              surface=compile_tools(ir)))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
    print(f"baseline, same run: bundled TWA set (4 T-Boxes + profiles) IR+tools+plan median "
          f"{twa * 1000:.0f} ms of {RUNS}")
    for name in ONTOLOGIES:
        present, enforced = axiom_kinds(load(name))
        listed = ", ".join(f"{k} {enforced.get(k, 0)}/{n}" for k, n in sorted(present.items()))
        print(f"{name}: {listed}")


if __name__ == "__main__":
    main()
