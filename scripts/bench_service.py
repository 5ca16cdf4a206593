"""Load benchmark of `kgctl serve` (loopback only, bounded).

50 concurrent clients x 100 mixed queries against a `kgctl serve` process holding the MOP-30
graph (the bundled MOP-30 traces replayed through the extraction tools, kgctl.service.seed),
then a runaway query that must hit the timeout while a probe keeps being answered.
Baseline in the same run: the same queries on the embedded pyoxigraph store, in process.

Run: python scripts/bench_service.py
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from pyoxigraph import NamedNode, QueryBoolean, Store

from kgctl.service.seed import mop30_quads
from kgctl.service.static_examples import load_examples

CLIENTS = 50
QUERIES_PER_CLIENT = 100
TIMEOUT_S = 2.0
STARTUP_S = 30.0
PROBE_EVERY_S = 0.1
ACCEPT = {"Accept": "application/sparql-results+json, text/turtle;q=0.9"}
PAPER_GRAPH = "https://w3id.org/kgctl/paper/10.1021_ja105986b"
RUNAWAYS = {
    "blocking (aggregate over a cross join)":
        "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }",
    "streaming (3-way cross join)":
        "SELECT * WHERE { GRAPH ?g { ?a ?b ?c . ?d ?e ?f . ?h ?i ?j } }",
}


def workload() -> list[dict]:
    """The mixed query set: page examples, ASK, and per-paper reads via default-graph-uri."""
    mix = [{"query": e["query"]} for e in load_examples()]
    mix.append({"query": "ASK { GRAPH ?g { ?s a <https://www.theworldavatar.com/kg/OntoSyn/"
                         "HeatChill> } }"})
    mix.append({"query": "SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 200",
                "default-graph-uri": PAPER_GRAPH})
    return mix


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def baseline(mix: list[dict]) -> tuple[list[float], float]:
    store = Store()
    store.extend(mop30_quads())
    latencies = []
    started = time.perf_counter()
    for params in itertools.islice(itertools.cycle(mix), CLIENTS * QUERIES_PER_CLIENT):
        t0 = time.perf_counter()
        graph = params.get("default-graph-uri")
        result = store.query(params["query"],
                             default_graph=NamedNode(graph) if graph else None,
                             use_default_graph_as_union=graph is None)
        if not isinstance(result, QueryBoolean):
            result = list(result)
        latencies.append(time.perf_counter() - t0)
    return latencies, time.perf_counter() - started


async def load(url: str, mix: list[dict]) -> tuple[list[float], float, Counter]:
    latencies: list[float] = []
    errors: Counter = Counter()  # what went wrong, by HTTP status or transport error
    limits = httpx.Limits(max_connections=CLIENTS)

    async def client(index: int, http: httpx.AsyncClient) -> None:
        for n in range(QUERIES_PER_CLIENT):
            params = mix[(index + n) % len(mix)]
            t0 = time.perf_counter()
            try:
                response = await http.post(f"{url}/query", data=params, headers=ACCEPT)
            except httpx.TransportError as exc:  # counted, not hidden
                errors[type(exc).__name__] += 1
                continue
            latencies.append(time.perf_counter() - t0)
            if response.status_code != 200:
                errors[str(response.status_code)] += 1

    async with httpx.AsyncClient(limits=limits, timeout=60) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(i, http) for i in range(CLIENTS)))
        return latencies, time.perf_counter() - started, errors


async def runaway(url: str, query: str) -> tuple[int, float, float, int]:
    """(status, seconds to answer, worst probe latency meanwhile, probes answered)."""
    probes: list[float] = []
    async with httpx.AsyncClient(timeout=60) as http:
        async def probe_until(done: asyncio.Event) -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                r = await http.get(f"{url}/query", params={"query": "ASK { ?s ?p ?o }"})
                assert r.status_code == 200
                probes.append(time.perf_counter() - t0)
                await asyncio.sleep(PROBE_EVERY_S)

        done = asyncio.Event()
        prober = asyncio.create_task(probe_until(done))
        t0 = time.perf_counter()
        response = await http.get(f"{url}/query", params={"query": query})
        seconds = time.perf_counter() - t0
        done.set()
        await prober
    return response.status_code, seconds, max(probes), len(probes)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(store_dir: Path, port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(store_dir), "--seed-mop30", "--port", str(port), "--timeout", str(TIMEOUT_S)],
        stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz")
            return process
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("kgctl serve did not start") from None
            time.sleep(0.1)


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request
    mix = workload()
    total = CLIENTS * QUERIES_PER_CLIENT
    base_lat, base_s = baseline(mix)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "kg", port)
        try:
            papers = httpx.get(f"{url}/papers").json()
            triples = sum(p["triples"] for p in papers)
            lat, seconds, errors = asyncio.run(load(url, mix))
            runs = {name: asyncio.run(runaway(url, q)) for name, q in RUNAWAYS.items()}
        finally:
            server.terminate()
            server.wait(STARTUP_S)
    figures = {
        "graph": {"papers": len(papers), "triples": triples},
        "load": {"clients": CLIENTS, "queries": total, "errors": sum(errors.values()),
                 "errors_by_kind": dict(errors),
                 "p50_ms": round(statistics.median(lat) * 1000, 2),
                 "p99_ms": round(percentile(lat, 0.99) * 1000, 2),
                 "throughput_qps": round(total / seconds, 1)},
        "baseline_embedded": {"queries": total,
                              "p50_ms": round(statistics.median(base_lat) * 1000, 3),
                              "p99_ms": round(percentile(base_lat, 0.99) * 1000, 3),
                              "throughput_qps": round(total / base_s, 1)},
        "runaway": {name: {"status": status, "answered_after_s": round(s, 2),
                           "timeout_s": TIMEOUT_S, "worst_probe_ms": round(worst * 1000, 1),
                           "probes_answered": n}
                    for name, (status, s, worst, n) in runs.items()},
    }
    figures["ratios"] = {
        "p50_service_over_embedded": round(figures["load"]["p50_ms"]
                                           / figures["baseline_embedded"]["p50_ms"], 1),
        "throughput_service_over_embedded": round(figures["load"]["throughput_qps"]
                                                  / figures["baseline_embedded"]
                                                  ["throughput_qps"], 3),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
