"""The three MCP servers as shared services: the figures of docs/mcp.md.

Every server runs as `kgctl ...` in a subprocess and is driven by the official SDK's clients:
1. sessions: S concurrent streamable-HTTP sessions x W writes to `kgctl mcp serve`, each
   session on its own paper (misfiled / merged counts), then 4 sessions on one paper (calls
   landed once, unique IRIs);
2. limits: a 1 MB argument to every tool of every server (refusal latency; baseline: a small
   refused call of the same tool);
3. start: `initialize` latency over stdio from process start, and when the first tool answers
   (the heavy loading runs in the background).

    python scripts/bench_mcp.py [--sessions 8] [--writes 100] [--species 5000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mcp_helpers import KGCTL, SYNTHESES, http_server, write_syntheses  # noqa: E402

from kgctl.chemistry.reference import build_reference, read_rows, table_paths  # noqa: E402
from kgctl.store import EmbeddedStore  # noqa: E402

MEGABYTE = "x" * 1_000_000
SHARED_SESSIONS = 4
START_RUNS = 3
REFUSAL_TRIES = 3
BARE = [sys.executable, "-c", "from mcp.server.mcpserver import MCPServer; MCPServer('bare').run()"]


def sessions(store: Path, n_sessions: int, writes: int) -> None:
    own = {f"paper-{s}": [f"syn {s} {w}" for w in range(writes)] for s in range(n_sessions)}
    shared = {s: [f"shared {s} {w}" for w in range(writes)] for s in range(SHARED_SESSIONS)}
    results: dict[str, list] = {}

    async def run(url: str, jobs: dict) -> float:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for key, (paper, labels) in jobs.items():
                async def one(key=key, paper=paper, labels=labels) -> None:
                    results[key] = await write_syntheses(url, paper, labels)
                group.start_soon(one)
        return time.perf_counter() - started

    with http_server(["mcp", "serve", "--store", str(store)]) as url:
        own_s = anyio.run(run, url, {p: (p, labels) for p, labels in own.items()})
        shared_s = anyio.run(run, url, {f"shared-{s}": ("shared", labels)
                                        for s, labels in shared.items()})
    graph = EmbeddedStore(store)
    try:
        misfiled = sum(r["paper"] != p for p in own for r in results[p])
        merged = 0
        for paper, labels in own.items():
            found = {row["s"].value for row in graph.query(SYNTHESES, paper_id=paper)}
            minted = {r["iris"][0] for r in results[paper]}
            misfiled += len(minted - found)
            merged += len(labels) - len(found)
        calls = SHARED_SESSIONS * writes
        iris = [r["iris"][0] for s in shared for r in results[f"shared-{s}"]]
        landed = len(graph.trace("shared"))
        entities = len(list(graph.query(SYNTHESES, paper_id="shared")))
    finally:
        graph.close()
    total = n_sessions * writes
    print(f"sessions: {n_sessions} HTTP sessions x {writes} writes, own papers: "
          f"{total} calls in {own_s:.1f} s ({total / own_s:.0f} calls/s); misfiled {misfiled}, "
          f"merged {merged}")
    print(f"sessions: {SHARED_SESSIONS} HTTP sessions x {writes} writes, one paper: {calls} "
          f"calls in {shared_s:.1f} s; landed {landed}, unique IRIs {len(set(iris))}, "
          f"syntheses in the graph {entities}")


async def _refusals(url: str) -> tuple[list[float], list[float], int]:
    """Per tool: the median of REFUSAL_TRIES refusals of a 1 MB argument, and of a small
    refused call (an unknown argument); how many 1 MB calls got the too_large envelope."""
    big, small, envelopes = [], [], 0
    async with Client(url) as client:
        for tool in (await client.list_tools()).tools:
            tries, baseline = [], []
            for _ in range(REFUSAL_TRIES):
                started = time.perf_counter()
                result = await client.call_tool(tool.name, {"label": MEGABYTE})
                tries.append(time.perf_counter() - started)
                envelopes += bool(result.is_error and
                                  json.loads(result.content[0].text)["code"] == "too_large")
                started = time.perf_counter()
                await client.call_tool(tool.name, {"no_such_argument": 1})
                baseline.append(time.perf_counter() - started)
            big.append(statistics.median(tries))
            small.append(statistics.median(baseline))
    return big, small, envelopes


def _grounding(reference: Path) -> list[str]:
    return ["ground", "--reference", str(reference), "--cache-dir", str(reference.parent / "cache"),
            "mcp"]


def limits(store: Path, reference: Path) -> None:
    servers = {"kgctl-instantiation": ["mcp", "serve", "--store", str(store)],
               "kgctl-query": ["query", "serve", "--store", str(store)],
               "kgctl-grounding": _grounding(reference)}
    for name, args in servers.items():
        with http_server(args) as url:
            big, small, envelopes = anyio.run(_refusals, url)
        print(f"limits: {name}: 1 MB argument to each of {len(big)} tools, {REFUSAL_TRIES} "
              f"times: {envelopes}/{len(big) * REFUSAL_TRIES} refused with the too_large "
              f"envelope; per tool median refusal: slowest tool {max(big) * 1000:.0f} ms, "
              f"median tool {statistics.median(big) * 1000:.0f} ms (a small refused call: "
              f"{statistics.median(small) * 1000:.0f} ms)")


async def _start(command: list[str], first: tuple[str, dict] | None) -> tuple[float, float]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:  # the initialize handshake itself
        initialized = time.perf_counter() - started
        if first is not None:
            result = await client.call_tool(*first)
            assert not result.is_error, result.content[0].text
        return initialized, time.perf_counter() - started


def start(store: Path, reference: Path) -> None:
    servers = {
        "kgctl-instantiation": (["mcp", "serve", "--store", str(store)],
                                ("select_paper", {"paper_id": "paper-0"})),
        "kgctl-query": (["query", "serve", "--store", str(store)], ("list_classes", {})),
        "kgctl-grounding": (_grounding(reference), ("lookup_species", {"name": "ethanol"})),
    }
    for name, (args, first) in servers.items():
        runs, bare = [], []  # interleaved, so both see the same machine load
        for _ in range(START_RUNS):
            bare.append(anyio.run(_start, BARE, None)[0])
            runs.append(anyio.run(_start, [*KGCTL, *args], first))
        initialized, empty = statistics.median(r[0] for r in runs), statistics.median(bare)
        print(f"start: {name} over stdio: initialize {initialized:.2f} s after process start "
              f"(median of {START_RUNS}, max {max(r[0] for r in runs):.2f} s); an empty SDK "
              f"server, interleaved: {empty:.2f} s ({initialized / empty:.2f} x); first "
              f"{first[0]} answered after {statistics.median(r[1] for r in runs):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--species", type=int, default=5000,
                        help="species in the grounding server's reference store")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store, reference = Path(tmp) / "kg", Path(tmp) / "reference"
        build_reference(reference, read_rows(table_paths(), limit=opts.species))
        sessions(store, opts.sessions, opts.writes)
        limits(store, reference)
        start(store, reference)


if __name__ == "__main__":
    main()
