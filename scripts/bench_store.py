"""Latency of one typical tool-call write (15 quads + its provenance record) into a paper graph
of 1,000 / 10,000 / 100,000 triples, on-disk embedded store, against in the same run:

- the floor: a bare pyoxigraph ``Store.extend`` of the same 15 quads into a store of that size;
- the baseline: rdflib parsing the paper's Turtle file, adding the quads, serialising it back.

Usage: python scripts/bench_store.py [--writes 300] [--rdflib-runs 5] [--rdflib-max 10000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import rdflib
from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Store, Triple, serialize

from kgctl.store import CallRecord, EmbeddedStore, Evidence
from kgctl.store.iris import graph_iri, mint_iri

SIZES = (1_000, 10_000, 100_000)
PAPER = "bench"
ONTO = "https://example.org/onto/"
NODES_PER_WRITE = 5
TRIPLES_PER_NODE = 3  # 15 quads per write: a typical step with its quantities
TIME = "2024-05-01T12:00:00+00:00"
FLOOR_GOAL = 3.0
RDFLIB_GOAL = 1_000.0


def call_triples(call: int) -> list[Triple]:
    out = []
    for k in range(NODES_PER_WRITE):
        node = mint_iri(PAPER, ONTO + "Thing", f"call {call} node {k}")
        out += [Triple(node, NamedNode(ONTO + "hasOrder"), Literal(str(k))),
                Triple(node, NamedNode(ONTO + "label"), Literal(f"thing {call}.{k}")),
                Triple(node, NamedNode(ONTO + "value"), Literal(f"{call * 0.5 + k} mL"))]
    return out


def call_record(call: int) -> CallRecord:
    return CallRecord(
        paper_id=PAPER, seq=0, tool="add_step", time=TIME,
        arguments={"order": call, "vessel": "vessel 1", "amount": {"value": 2.5, "unit": "mL"}},
        iris=tuple(mint_iri(PAPER, ONTO + "Thing", f"call {call} node {k}").value
                   for k in range(NODES_PER_WRITE)),
        evidence=Evidence(quote="The mixture was stirred for 2 h.", section="2.1", start=10,
                          end=42))


def background(size: int) -> list[Triple]:
    """`size` triples of earlier calls (negative call numbers never collide with timed ones)."""
    per_call = NODES_PER_WRITE * TRIPLES_PER_NODE
    return [t for c in range(-(size // per_call), 0) for t in call_triples(c)][:size]


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def median_us(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1e6


def bench_size(size: int, *, writes: int, rdflib_runs: int, rdflib_max: int, work: Path
               ) -> dict[str, float]:
    base = background(size)
    graph = graph_iri(PAPER)

    # inputs are built before timing on both sides: only the stores' own work is measured
    calls = {c: (call_triples(c), call_record(c)) for c in range(1, writes + 1)}
    batches = {c: [Quad(t.subject, t.predicate, t.object, graph) for t in calls[c][0]]
               for c in calls}
    store = EmbeddedStore(work / f"kgctl-{size}")
    store.write(PAPER, insert=base)
    floor_store = Store(str(work / f"floor-{size}"))
    floor_store.extend(Quad(t.subject, t.predicate, t.object, graph) for t in base)
    # interleaved, so load from other processes on the machine hits both sides alike
    ours_s, floor_s = [], []
    for c in calls:
        ours_s.append(timed(lambda c=c: store.write(PAPER, insert=calls[c][0],
                                                    record=calls[c][1])))
        floor_s.append(timed(lambda c=c: floor_store.extend(batches[c])))
    ours, floor = median_us(ours_s), median_us(floor_s)

    row = {"size": size, "write_us": ours, "floor_us": floor, "vs_floor": ours / floor}
    if size <= rdflib_max:
        turtle = work / f"paper-{size}.ttl"
        turtle.write_bytes(serialize(base, format=RdfFormat.TURTLE))

        def rdflib_write(c: int) -> None:
            g = rdflib.Graph()
            g.parse(turtle, format="turtle")
            for t in call_triples(c):
                g.add((rdflib.URIRef(t.subject.value), rdflib.URIRef(t.predicate.value),
                       rdflib.Literal(t.object.value)))
            g.serialize(destination=turtle, format="turtle")

        baseline = median_us([timed(lambda c=c: rdflib_write(c)) for c in range(rdflib_runs)])
        row |= {"rdflib_us": baseline, "speedup_vs_rdflib": baseline / ours}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--rdflib-runs", type=int, default=5)
    parser.add_argument("--rdflib-max", type=int, default=10_000,
                        help="largest graph size to run the (slow) rdflib baseline on")
    args = parser.parse_args()
    print(f"typical write: {NODES_PER_WRITE * TRIPLES_PER_NODE} quads + provenance record, "
          f"on-disk store; median of {args.writes} writes (rdflib: {args.rdflib_runs})")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            row = bench_size(size, writes=args.writes, rdflib_runs=args.rdflib_runs,
                             rdflib_max=args.rdflib_max, work=Path(tmp))
            rows.append(row)
            line = (f"{size:>7} triples: write {row['write_us']:8.1f} us | floor extend "
                    f"{row['floor_us']:7.1f} us | x{row['vs_floor']:.2f} of floor")
            if "rdflib_us" in row:
                line += (f" | rdflib {row['rdflib_us'] / 1e3:9.1f} ms | "
                         f"{row['speedup_vs_rdflib']:,.0f}x faster")
            print(line, flush=True)
    ten_k = next(r for r in rows if r["size"] == 10_000)
    flatness = rows[-1]["write_us"] / rows[0]["write_us"]
    print(f"goals at 10,000: within {FLOOR_GOAL}x of floor -> x{ten_k['vs_floor']:.2f} "
          f"({'met' if ten_k['vs_floor'] <= FLOOR_GOAL else 'NOT met'}); "
          f">= {RDFLIB_GOAL:,.0f}x vs rdflib -> {ten_k.get('speedup_vs_rdflib', 0):,.0f}x "
          f"({'met' if ten_k.get('speedup_vs_rdflib', 0) >= RDFLIB_GOAL else 'NOT met'})")
    floor_growth = rows[-1]["floor_us"] / rows[0]["floor_us"]
    print(f"flatness: latency at {SIZES[-1]:,} / at {SIZES[0]:,} = {flatness:.2f} "
          f"(floor extend itself: {floor_growth:.2f})")


if __name__ == "__main__":
    main()
