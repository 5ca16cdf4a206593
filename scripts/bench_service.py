"""`kgctl serve` against `oxigraph serve` on identical MOP-30 data, in one run (loopback only),
beside two deliberately simple designs (scripts/simple_service.py): uvicorn running kgctl's
app in one process, answering queries inline (``simple``) or in a pool of as many processes as
kgctl has workers (``simple-pool``).

All servers hold the MOP-30 graph (the bundled MOP-30 traces replayed through the extraction
tools, kgctl.pipeline.seed). One load generator (uvloop + httptools, keep-alive connections)
measures, interleaving the servers round by round (ratios: each over oxigraph):
  1. single-client latency of ``ASK {}`` (the p50s on 9 fresh connection pairs: the median of
     each server's, and its ratio as the median of the pairs' ratios) and of each read-out
     query (domains/mop30/readout/*.rq, on a paper's graph as default graph, papers in turn):
     p50 per server and the ratio;
  2. ``ASK {}`` throughput with 50 connections;
  3. the mixed read-out workload (read-out queries on every paper, the page's examples)
     throughput with 50 connections;
(2 and 3 in three rounds of every server in turn: the ratio is the median of the rounds')
then, for ``simple`` and ``simple-pool``, a cheap probe's latency while as many runaway
queries run as it has processes (neither stops a query); then kgctl with its default workers
and again with 2 and 4 (fresh servers): 24 concurrent runaway queries (timeout 2 s) while a
probe asks a cheap query every 0.1 s; the worst probe latency and, 10 s after the deadline,
how many of the server's processes still burn CPU. The load average before and after is
printed (the machine may be shared).

Run: python scripts/bench_service.py
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httptools
import uvloop
from pyoxigraph import RdfFormat, Store, serialize

from kgctl.pipeline.seed import pack_quads
from kgctl.service.config import DEFAULT_WORKERS
from kgctl.service.static_examples import load_examples

CONNECTIONS = 50
ROUNDS_ASK = 540
ASK_CONNECTIONS = 9  # ASK {} is measured on this many fresh connection pairs in turn: where
# the kernel runs a server's thread against the client's moves its latency by 2x
ROUNDS_READOUT = 90  # per read-out query and server: each of the 30 papers thrice (a median
# of 30 moved by 0.3 between runs of the same code)
THROUGHPUT_S = 3.0
THROUGHPUT_REPEATS = 3  # rounds: every server in turn, each round's ratios paired
RUNAWAYS = 24
BURST_WORKERS = (2, 4)
TIMEOUT_S = 2.0
PROBE_EVERY_S = 0.1
CPU_GRACE_S = 10.0
STARTUP_S = 60.0
IDLE_S = 5.0
QUERIES = Path(__file__).resolve().parents[1] / "domains" / "mop30" / "readout"
ACCEPT = "application/sparql-results+json, text/turtle;q=0.9"  # the page's examples include
# CONSTRUCT queries
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }"
PROBE = "ASK { GRAPH ?g { ?s a <https://www.theworldavatar.com/kg/OntoSyn/HeatChill> } }"
PAPER_PREFIX = "https://w3id.org/kgctl/paper/"
SIMPLE = Path(__file__).with_name("simple_service.py")
SIMPLE_DESIGNS = {"simple": "inline", "simple-pool": "pool"}
UNSTOPPABLE = {"simple": 1, "simple-pool": DEFAULT_WORKERS}  # processes a runaway can hold
STARVED_S = 10.0


class Connection:
    """One keep-alive HTTP/1.1 connection that sends GETs and reads whole responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def get(self, target: str) -> tuple[int, int]:
        """(status, body bytes) of ``GET target``."""
        self.writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {ACCEPT}\r\n"
                          "\r\n".encode())
        done = asyncio.get_running_loop().create_future()
        size = 0

        class Parse:
            def on_body(self, body: bytes) -> None:
                nonlocal size
                size += len(body)

            def on_message_complete(self) -> None:
                done.set_result(None)

        parser = httptools.HttpResponseParser(Parse())
        while not done.done():
            data = await self.reader.read(1 << 16)
            if not data:
                raise ConnectionError("server closed the connection")
            parser.feed_data(data)
        return parser.get_status_code(), size

    def close(self) -> None:
        self.writer.close()


def target(query: str, graph: str | None = None) -> str:
    params = [("query", query)] + ([("default-graph-uri", graph)] if graph else [])
    return "/query?" + urlencode(params)


def p50_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


async def single_client(ports: dict[str, int], targets: list[str]) -> dict[str, float]:
    """p50 latency per server over `targets`, servers interleaved request by request in a new
    order each time: the server a request follows moves its latency (the caches it left)."""
    conns = {name: await Connection.open(port) for name, port in ports.items()}
    latencies: dict[str, list[float]] = {name: [] for name in ports}
    order = random.Random(len(targets))  # the same orders in every run
    for path in targets:
        for name, conn in order.sample(list(conns.items()), len(conns)):
            t0 = time.perf_counter()
            status, _ = await conn.get(path)
            latencies[name].append(time.perf_counter() - t0)
            assert status == 200, (name, status, path)
    for conn in conns.values():
        conn.close()
    return {name: p50_ms(values) for name, values in latencies.items()}


async def throughput(port: int, targets: list[str]) -> tuple[float, int]:
    """(requests per second, non-200 answers) with CONNECTIONS connections for THROUGHPUT_S."""
    conns = [await Connection.open(port) for _ in range(CONNECTIONS)]
    stop = time.perf_counter() + THROUGHPUT_S
    counts, errors = [0] * CONNECTIONS, [0]

    async def run(index: int) -> None:
        n = index
        while time.perf_counter() < stop:
            try:
                status, _ = await conns[index].get(targets[n % len(targets)])
            except ConnectionError:  # counted as an error; the client connects again
                conns[index].close()
                conns[index] = await Connection.open(port)
                status = 0
            counts[index] += 1
            errors[0] += status != 200
            n += 1

    started = time.perf_counter()
    await asyncio.gather(*(run(i) for i in range(CONNECTIONS)))
    elapsed = time.perf_counter() - started
    for conn in conns:
        conn.close()
    return round(sum(counts) / elapsed, 1), errors[0]


async def compare_throughput(ports: dict[str, int], targets: list[str]) -> dict:
    runs: dict[str, list[float]] = {name: [] for name in ports}
    errors = dict.fromkeys(ports, 0)
    for _ in range(THROUGHPUT_REPEATS):
        for name, port in ports.items():
            qps, bad = await throughput(port, targets)
            runs[name].append(qps)
            errors[name] += bad
    return {"qps_runs": runs, "errors": errors, **paired(
        [{name: runs[name][i] for name in runs} for i in range(THROUGHPUT_REPEATS)], 3)}


def paired(rounds: list[dict[str, float]], digits: int) -> dict[str, float]:
    """The median of the rounds' ratios: a server's figure and oxigraph's in one round (3 s
    apart at most) share the machine's speed, which moves oxigraph's own figures by a third
    between rounds."""
    each = [ratios(figures, digits) for figures in rounds]
    return {key: statistics.median(r[key] for r in each) for key in each[0]}


def ratios(figures: dict[str, float], digits: int) -> dict[str, float]:
    return {f"ratio_{name}_over_oxigraph": round(value / figures["oxigraph"], digits)
            for name, value in figures.items() if name != "oxigraph"}


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


async def idle_cpu(processes: dict[str, subprocess.Popen]) -> dict:
    """CPU time (percent of one core) each server, its processes counted, uses with no client."""
    def tree(pid: int) -> int:
        return sum(cpu_ticks(p) for p in [pid, *descendants(pid)])

    before = {name: tree(process.pid) for name, process in processes.items()}
    await asyncio.sleep(IDLE_S)
    return {name: round((tree(process.pid) - before[name]) / os.sysconf("SC_CLK_TCK")
                        / IDLE_S * 100, 2) for name, process in processes.items()}


async def runaways(port: int, server_pid: int) -> dict:
    probes: list[float] = []
    statuses: list[int] = []
    probe_statuses: list[int] = []  # a probe refused (503) is counted, not a crash of the run
    done = asyncio.Event()

    async def probe() -> None:
        conn = await Connection.open(port)
        while not done.is_set():
            t0 = time.perf_counter()
            status, _ = await conn.get(target(PROBE))
            probes.append(time.perf_counter() - t0)
            probe_statuses.append(status)
            await asyncio.sleep(PROBE_EVERY_S)
        conn.close()

    async def runaway() -> None:
        conn = await Connection.open(port)
        status, _ = await conn.get(target(RUNAWAY))
        statuses.append(status)
        conn.close()

    prober = asyncio.create_task(probe())
    started = time.perf_counter()
    await asyncio.gather(*(runaway() for _ in range(RUNAWAYS)))
    answered_s = time.perf_counter() - started
    await asyncio.sleep(max(0.0, TIMEOUT_S + CPU_GRACE_S - (time.perf_counter() - started)))
    before = {pid: cpu_ticks(pid) for pid in descendants(server_pid)}
    await asyncio.sleep(1.0)
    burning = [pid for pid, ticks in before.items() if cpu_ticks(pid) - ticks > 10]
    done.set()
    await prober
    return {"runaways": RUNAWAYS, "timeout_s": TIMEOUT_S,
            "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
            "all_answered_after_s": round(answered_s, 2),
            "probes_answered": len(probes), "worst_probe_ms": round(max(probes) * 1000, 1),
            "probe_statuses": {str(s): probe_statuses.count(s)
                               for s in sorted(set(probe_statuses))},
            "p50_probe_ms": p50_ms(probes),
            f"processes_burning_cpu_{CPU_GRACE_S:g}s_after_deadline": len(burning)}


async def starved(port: int, runaways: int) -> dict:
    """A cheap probe's latency (up to STARVED_S) while `runaways` runaway queries run."""
    conns = [await Connection.open(port) for _ in range(runaways)]
    tasks = [asyncio.create_task(conn.get(target(RUNAWAY))) for conn in conns]
    await asyncio.sleep(0.5)  # they have started
    probe = await Connection.open(port)
    started = time.perf_counter()
    try:
        status, _ = await asyncio.wait_for(probe.get(target(PROBE)), STARVED_S)
    except TimeoutError:
        status = 0
    waited = time.perf_counter() - started
    for task in tasks:
        task.cancel()
    for conn in [*conns, probe]:
        conn.close()
    return {"runaways": runaways, "probe_status": status or f"none within {STARVED_S:g} s",
            "probe_ms": round(waited * 1000, 1)}


def stop(name: str, process: subprocess.Popen) -> None:
    if name.startswith(tuple(SIMPLE_DESIGNS)):  # a query in its event loop or pool does not
        os.killpg(process.pid, signal.SIGKILL)  # stop for SIGTERM
    else:
        process.terminate()
    process.wait(STARTUP_S)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server on port {port} did not start") from None
            time.sleep(0.1)


def start_servers(tmp: Path) -> tuple[dict[str, int], dict[str, subprocess.Popen]]:
    quads = pack_quads()
    for name in ("kgctl", *(f"kgctl-{n}" for n in BURST_WORKERS), *SIMPLE_DESIGNS):
        store = Store(str(tmp / name))
        store.extend(quads)
        store.flush()
        del store
    data = tmp / "mop30.nq"
    data.write_bytes(serialize(quads, format=RdfFormat.N_QUADS))
    subprocess.run(["oxigraph", "load", "--location", str(tmp / "oxigraph"), "--file", str(data)],
                   check=True, capture_output=True)
    ports = {name: free_port() for name in ("kgctl", "oxigraph", *SIMPLE_DESIGNS)}
    processes = {
        "kgctl": start_kgctl(tmp / "kgctl", ports["kgctl"]),
        "oxigraph": subprocess.Popen(
            ["oxigraph", "serve", "--location", str(tmp / "oxigraph"), "--bind",
             f"127.0.0.1:{ports['oxigraph']}"], stderr=subprocess.DEVNULL),
        **{name: start_simple(tmp, name, ports[name]) for name in SIMPLE_DESIGNS},
    }
    for name, process in processes.items():
        wait_ready(ports[name], process)
    return ports, processes


def start_kgctl(store: Path, port: int, *options: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(store), "--port", str(port), "--timeout", str(TIMEOUT_S), *options],
        stderr=subprocess.DEVNULL)


def start_simple(tmp: Path, name: str, port: int):
    return subprocess.Popen(
        [sys.executable, str(SIMPLE), str(tmp / name), str(port), "--design",
         SIMPLE_DESIGNS[name], "--processes", str(DEFAULT_WORKERS)],
        stderr=subprocess.DEVNULL, start_new_session=True)  # its processes are stopped with it


async def burst_with_workers(tmp: Path, workers: int) -> dict:
    port = free_port()
    process = start_kgctl(tmp / f"kgctl-{workers}", port, "--workers", str(workers))
    try:
        wait_ready(port, process)
        return await runaways(port, process.pid)
    finally:
        stop("kgctl", process)


def readout_targets(papers: list[str]) -> dict[str, list[str]]:
    return {rq.stem: [target(rq.read_text(), PAPER_PREFIX + p) for p in papers]
            for rq in sorted(QUERIES.glob("*.rq"))}


def papers_of(quads) -> list[str]:
    return sorted({q.graph_name.value[len(PAPER_PREFIX):] for q in quads
                   if q.graph_name.value.startswith(PAPER_PREFIX)
                   and "/" not in q.graph_name.value[len(PAPER_PREFIX):]})


async def measure(ports: dict[str, int], processes: dict[str, subprocess.Popen],
                  papers: list[str], tmp: Path) -> dict:
    readouts = readout_targets(papers)
    ask = [target("ASK {}")]
    idle = await idle_cpu(processes)
    await single_client(ports, ask * 20)  # warm both servers up
    pairs = [await single_client(ports, ask * (ROUNDS_ASK // ASK_CONNECTIONS))
             for _ in range(ASK_CONNECTIONS)]
    latency = {name: await single_client(
        ports, (targets * (ROUNDS_READOUT // len(targets) + 1))[:ROUNDS_READOUT])
        for name, targets in readouts.items()}
    for figures in latency.values():
        figures.update(ratios(figures, 2))
    latency = {"ASK {}": {**{name: statistics.median(p[name] for p in pairs) for name in ports},
                          **paired(pairs, 2), "ratio_per_connection_pair": sorted(
                              ratios(p, 2)["ratio_kgctl_over_oxigraph"] for p in pairs)},
               **latency}
    mixed = [t for targets in readouts.values() for t in targets]
    mixed += [target(e["query"]) for e in load_examples()]
    figures = {
        "idle_cpu_percent_of_a_core": idle,
        "single_client_p50_ms": latency,
        "ask_throughput_50_connections": await compare_throughput(ports, ask),
        "mixed_readout_throughput_50_connections": await compare_throughput(ports, mixed),
        # these two do not stop a query: as many runaways as they have processes starve them
        "simple_designs_cheap_probe_behind_runaways": {
            name: await starved(ports[name], runaways) for name, runaways in UNSTOPPABLE.items()},
    }
    for name in UNSTOPPABLE:  # their runaways go on: stop them before the bursts
        stop(name, processes.pop(name))
    figures["runaway_burst_kgctl"] = await runaways(ports["kgctl"], processes["kgctl"].pid)
    stop("kgctl", processes.pop("kgctl"))
    for n in BURST_WORKERS:
        figures[f"runaway_burst_kgctl_{n}_workers"] = await burst_with_workers(tmp, n)
    return figures


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ports, processes = start_servers(Path(tmp))
        try:
            papers = papers_of(pack_quads())
            load_before = os.getloadavg()
            figures = uvloop.run(measure(ports, processes, papers, Path(tmp)))
        finally:
            for name, process in processes.items():
                stop(name, process)
    figures["machine"] = {"cpus": os.cpu_count(), "papers": len(papers),
                          "load_average_1_5_15_before": load_before,
                          "load_average_1_5_15_after": os.getloadavg()}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
