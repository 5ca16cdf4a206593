"""Latency of compiled tool calls through the in-process MCP client on a 10,000-triple paper.

Prints median and p99 of create and link calls, the share of a call spent validating and
planning (the same call as a dry run, engine only), the bare store write underneath as the
floor, and the compile time of the whole tool surface.

Run: python scripts/bench_instantiation.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.compiler import compile_tools
from kgctl.instantiation.engine import Instantiator
from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir
from kgctl.store import CallRecord, EmbeddedStore, utc_now

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from instantiation_helpers import STEPS, paper_calls  # noqa: E402

PAPER = "bench"
TARGET_TRIPLES = 10_000
CALLS = 300
COMPILES = 5
P99 = 0.99


def fill(engine: Instantiator) -> None:
    """Replay ground-truth papers into one paper until it holds TARGET_TRIPLES triples."""
    round_ = 0
    while True:
        for path in sorted(STEPS.glob("*.json")):
            for tool, args in paper_calls(path):
                args = _prefixed(args, f"r{round_} {path.stem} ")
                try:
                    engine.call(tool, PAPER, args)
                except Exception:  # a few ground-truth records carry feedback-worthy values
                    continue
            if sum(1 for _ in engine.store.triples(PAPER)) >= TARGET_TRIPLES:
                return
        round_ += 1


def _prefixed(args: dict, prefix: str) -> dict:
    out = dict(args)
    for key in ("label", "chemical_synthesis", "subject"):
        if key in out and isinstance(out[key], str) and (key != "label" or "order" not in out):
            out[key] = prefix + out[key]
    if "chemical_output" in out:
        out["chemical_output"] = {**out["chemical_output"],
                                  "label": prefix + out["chemical_output"]["label"]}
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ir = default_ir()
    compile_times = []
    for _ in range(COMPILES):
        start = time.perf_counter()
        surface = compile_tools(ir)
        compile_times.append(time.perf_counter() - start)
    store = EmbeddedStore()
    fill(Instantiator(ir, store, surface=surface))
    triples = sum(1 for _ in store.triples(PAPER))
    create_ms: list[float] = []
    link_ms: list[float] = []
    dry_ms: list[float] = []
    sizes: list[int] = []

    async def run() -> None:
        server = build_server(ir, store, paper_id=PAPER, surface=surface)
        async with Client(server) as client:
            made = await client.call_tool("create_chemical_synthesis", {
                "label": "bench synthesis", "chemical_output": {"label": "bench product"}})
            synthesis = made.structured_content["iris"][0]
            vessel = await client.call_tool("create_add", {
                "chemical_synthesis": synthesis, "order": 1, "vessel": "bench flask",
                "added_chemical_input": {"label": "water"}})
            assert not vessel.is_error, vessel.content[0].text
            flask = "bench flask"
            for order in range(2, CALLS + 2):
                args = {"chemical_synthesis": synthesis, "order": order,
                        "target_temperature": {"value": 120, "unit": "°C"},
                        "step_duration": {"value": 2, "unit": "days"},
                        "heat_chill_device": "oven", "vessel_environment": "Ar"}
                start = time.perf_counter()
                result = await client.call_tool("create_heat_chill", args)
                create_ms.append((time.perf_counter() - start) * 1e3)
                assert not result.is_error, result.content[0].text
                sizes.append(result.structured_content["added"])
                step = result.structured_content["iris"][0]
                start = time.perf_counter()
                linked = await client.call_tool("link", {
                    "subject": step, "property": "ontosyn:hasVessel", "object": flask})
                link_ms.append((time.perf_counter() - start) * 1e3)
                assert not linked.is_error, linked.content[0].text

    anyio.run(run)
    engine = Instantiator(ir, store, surface=surface)
    synthesis = engine.index(PAPER).find_label("bench synthesis").pop()
    for _ in range(CALLS):
        start = time.perf_counter()
        engine.call("create_heat_chill", PAPER, {
            "chemical_synthesis": synthesis, "order": CALLS + 2, "dry_run": True,
            "target_temperature": {"value": 120, "unit": "°C"},
            "step_duration": {"value": 2, "unit": "days"}, "heat_chill_device": "oven",
            "vessel_environment": "Ar"})
        dry_ms.append((time.perf_counter() - start) * 1e3)
    bare_ms = []
    width = int(statistics.median(sizes))
    for i in range(CALLS):
        node = NamedNode(f"https://w3id.org/kgctl/paper/{PAPER}/Bare/{i}")
        batch = [Triple(node, NamedNode(f"https://example.org/p{j}"), Literal(str(j)))
                 for j in range(width)]
        record = CallRecord(paper_id=PAPER, seq=0, tool="bare", arguments={}, time=utc_now())
        start = time.perf_counter()
        store.write(PAPER, insert=batch, record=record)
        bare_ms.append((time.perf_counter() - start) * 1e3)

    create_med, link_med = statistics.median(create_ms), statistics.median(link_ms)
    bare_med = statistics.median(bare_ms)
    print(f"paper graph: {triples} triples before the timed calls; {CALLS} calls each")
    print(f"create_heat_chill via MCP: median {create_med:.2f} ms, p99 "
          f"{pct(create_ms, P99):.2f} ms ({width} triples per call)")
    print(f"link via MCP:              median {link_med:.2f} ms, p99 {pct(link_ms, P99):.2f} ms")
    print(f"validation + planning (dry run, engine only): median "
          f"{statistics.median(dry_ms):.2f} ms = "
          f"{statistics.median(dry_ms) / create_med:.0%} of a create call")
    print(f"bare store write ({width} triples + record), baseline: median {bare_med:.3f} ms; "
          f"create call = {create_med / bare_med:.1f}x the bare write")
    print(f"compile whole tool surface ({len(surface.tools)} tools): median "
          f"{statistics.median(compile_times) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
