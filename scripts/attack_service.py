"""Attacks on `kgctl serve` over loopback, each printing its figure (issue: no hang, no bypass,
no lost connection).

  chunks     malformed chunk sizes (negative, signed, spaced, prefixed, huge, not hex, short):
             every one refused 400, and /healthz still answered at once
  service    SERVICE/LOAD to a loopback port of the caller's choice in every escape form: all
             refused 400, and the port never contacted
  moved      1,000 idle connections on one worker, moved at once when a long query retires it:
             how many are answered
  large      an 8 MB answer on the 1,100th connection of one worker, read slowly (64 KB
             buffer, pauses): bytes announced and delivered, and how long it took
  silent     25,000 silent connections (more than the 20,000 descriptors) while a fresh read
             and an authenticated write are sent every 0.2 s: their statuses, and how long the
             last silent connection stayed open past the header timeout
  retire     10,000 rounds of a real worker process writing its state while the owner freezes
             it (SIGSTOP), sets the retire byte and thaws it: retire orders lost
  writes     p50 latency of 200 small authenticated updates in a row, then of 50 pairs of an
             update and a read that must see it (it waits for a checkpoint view)

Run: python scripts/attack_service.py [part ...]   (all parts by default)
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx
from pyoxigraph import Store

from kgctl.service.seed import pack_quads
from kgctl.service.worker_state import WorkerState, states_block

TOKEN = "attack-token"
PAIRS = 50
STARTUP_S = 60.0
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }"
ASK = "ASK { GRAPH ?g { ?s ?p ?o } }"
CHUNK_SIZES = [b"-6", b"+6", b" 6", b"6 ", b"0x6", b"6 6", b"", b"g", b"F" * 40, b"5", b"-0",
               b"6\x00", b"1" * 17, b"FFFFFFFFFFFFFFFFF", b"-FFFFFFFF", b"\t6", b"6\r", b"0x10",
               b"+5", b"1" * 30, b"6 ;x"]
SERVICE_FORMS = [
    "SELECT * {{ SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ \\u0053ERVICE SILENT <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ \\U00000053ERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ BIND(<{t}> AS ?e) SERVICE ?e {{ ?s ?p ?o }} }}",
    "SELECT * {{ VALUES ?e {{ <{t}> }} SERVICE ?e {{ ?s ?p ?o }} }}",
    "select * {{ sErViCe <{t}> {{ ?s ?p ?o }} }}",
    "PREFIX t: <{t}> SELECT * {{ SERVICE t: {{ ?s ?p ?o }} }}",
    "BASE <{t}> SELECT * {{ SERVICE <> {{ ?s ?p ?o }} }}",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\# ?o . SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\' ?o . SERVICE <{t}> {{ ?s ?p ?o }} }} #'",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\\" ?o . SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:\\#a ?o . SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ ?s ?p \"\\\"\" . SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ ?s ?p '''a''' . SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ # <\n SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ {{ SELECT * {{ SERVICE <{t}> {{ ?s ?p ?o }} }} }} }}",
    "SELECT * {{ OPTIONAL {{ SERVICE <{t}> {{ ?s ?p ?o }} }} }}",
    "SELECT * {{ FILTER EXISTS {{ SERVICE <{t}> {{ ?s ?p ?o }} }} }}",
    "SELECT * {{ MINUS {{ SERVICE <{t}> {{ ?s ?p ?o }} }} }}",
    "ASK {{ SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "CONSTRUCT {{ ?s ?p ?o }} WHERE {{ SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "DESCRIBE ?s WHERE {{ SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ OPTIONAL {{ ?s ?p \"a\\u0022@en, \" }} . SERVICE <{t}> {{ ?s ?p ?o }} "
    "OPTIONAL {{ ?s ?p \", \\u0022\" }} }}",  # rdflib's decoding ends the string early
    "SELECT * {{ ?s ?p ?o . # \\u000A1234 ?x ?y . SERVICE <{t}> {{ ?a ?b ?c }}\n}}",
    "SELECT * {{ SERVICE <\\u0068{rest}> {{ ?s ?p ?o }} }}",  # h of http, then the rest
    "SELECT * {{ BIND(1 AS ?o) # x\r SERVICE <{t}> {{ ?a ?b ?c }} \n }}",  # CR ends a comment
]
UPDATE_FORMS = [
    "LOAD <{t}>",
    "LOAD SILENT <{t}> INTO GRAPH <urn:g>",
    "\\u004cOAD <{t}>",
    "PREFIX t: <{t}> LOAD t:",
    "INSERT {{ ?s ?p ?o }} WHERE {{ SERVICE <{t}> {{ ?s ?p ?o }} }}",
    "INSERT DATA {{ <urn:a> <urn:b> 'x' }} ; LOAD <{t}>",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(store: Path, *options: str) -> tuple[subprocess.Popen, int]:
    if not store.exists():
        seeded = Store(str(store))
        seeded.extend(pack_quads())
        seeded.flush()
        del seeded
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(store), "--port", str(port), "--update-token", TOKEN, *options],
        stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz")
            return process, port
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("kgctl serve did not start") from None
            time.sleep(0.1)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(STARTUP_S)


def request(target: str, extra: str = "", body: bytes = b"") -> bytes:
    return (f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n").encode() + body


def status_of(sock: socket.socket, timeout: float = 10.0) -> int:
    sock.settimeout(timeout)
    head = b""
    while b"\r\n" not in head:
        data = sock.recv(4096)
        if not data:
            return 0
        head += data
    return int(head.split(b" ", 2)[1])


def chunks(tmp: Path) -> dict:
    process, port = serve(tmp / "store")
    try:
        refused = []
        for size in CHUNK_SIZES:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                             b"application/sparql-query\r\nTransfer-Encoding: chunked\r\n\r\n"
                             + size + b"\r\nASK {}\r\n0\r\n\r\n")
                refused.append(status_of(sock) == 400)
        started = time.monotonic()
        health = httpx.get(f"http://127.0.0.1:{port}/healthz").status_code
        return {"malformed_chunk_sizes": len(CHUNK_SIZES), "refused_400": sum(refused),
                "healthz_after": health,
                "healthz_after_ms": round((time.monotonic() - started) * 1000, 1)}
    finally:
        stop(process)


def service(tmp: Path) -> dict:
    victim = socket.socket()
    victim.bind(("127.0.0.1", 0))
    victim.listen(64)
    victim.settimeout(0.5)
    url = f"http://127.0.0.1:{victim.getsockname()[1]}/sparql"
    process, port = serve(tmp / "store")
    base = f"http://127.0.0.1:{port}"
    try:
        statuses = [httpx.get(f"{base}/query", params={
            "query": form.format(t=url, rest=url[1:])}).status_code for form in SERVICE_FORMS]
        statuses += [httpx.post(f"{base}/update", content=form.format(t=url), headers={
            "Content-Type": "application/sparql-update",
            "Authorization": f"Bearer {TOKEN}"}).status_code for form in UPDATE_FORMS]
        contacted = 0
        try:
            while True:
                victim.accept()[0].close()
                contacted += 1
        except TimeoutError:
            pass
        return {"forms": len(statuses), "refused_400": statuses.count(400),
                "other_statuses": sorted(s for s in statuses if s != 400),
                "victim_port_contacted": contacted}
    finally:
        stop(process)
        victim.close()


def moved(tmp: Path, count: int = 1000) -> dict:
    process, port = serve(tmp / "store", "--workers", "1", "--timeout", "10")
    idle = []
    try:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        for sock in idle:
            sock.sendall(request("/healthz"))
        assert all(status_of(sock) == 200 for sock in idle)
        runaway = socket.create_connection(("127.0.0.1", port))
        runaway.sendall(request("/query?" + urlencode({"query": RUNAWAY})))
        started = time.monotonic()
        for sock in idle:
            sock.sendall(request("/query?" + urlencode({"query": ASK})))
        answered = 0
        for sock in idle:
            try:
                answered += status_of(sock, max(0.05, started + 9 - time.monotonic())) == 200
            except TimeoutError:
                pass
        return {"idle_connections_moved": count, "answered_200": answered,
                "within_s": round(time.monotonic() - started, 2),
                "runaway_status": status_of(runaway, 30)}
    finally:
        for sock in idle:
            sock.close()
        stop(process)


def large(tmp: Path, before: int = 1099) -> dict:
    doublings = 14  # 64 bytes doubled: 1 MB a row, 8 rows
    binds = " ".join(f"BIND(CONCAT(?s{i}, ?s{i}) AS ?s{i + 1})" for i in range(doublings))
    query = (f'SELECT ?s{doublings} WHERE {{ VALUES ?row {{ 1 2 3 4 5 6 7 8 }} '
             f'BIND("{"x" * 64}" AS ?s0) {binds} }}')
    process, port = serve(tmp / "store", "--workers", "1")
    idle = []
    try:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(before)]
        for sock in idle:
            sock.sendall(request("/healthz"))
        assert all(status_of(sock) == 200 for sock in idle)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            started = time.monotonic()
            sock.sendall(request("/query?" + urlencode({"query": query}),
                                 "Accept: text/csv\r\n"))
            sock.settimeout(60)
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(4096)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            reads = 0
            while len(body) < length:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                body += chunk
                reads += 1
                if reads % 4 == 0:
                    time.sleep(0.005)  # a slow reader: the server's writes must wait
        return {"connection_number": before + 1, "announced_bytes": length,
                "delivered_bytes": len(body), "read_in_s": round(time.monotonic() - started, 2)}
    finally:
        for sock in idle:
            sock.close()
        stop(process)


def _hold_silent(port: int, count: int, opened: multiprocessing.Queue,
                 closed: multiprocessing.Queue) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port)))
        except OSError:
            break
    opened.put(len(socks))
    last, statuses = 0.0, {}
    for sock in socks:  # each is answered (408/503) or closed; wait for all of them
        sock.settimeout(60)
        try:
            data = sock.recv(64)
        except OSError:
            data = b"reset"
        key = data[:12].decode(errors="replace") or "closed"
        statuses[key] = statuses.get(key, 0) + 1
        last = time.monotonic()
    closed.put((last, statuses))


def silent(tmp: Path, count: int = 25_000, clients: int = 2) -> dict:
    process, port = serve(tmp / "store")
    base = f"http://127.0.0.1:{port}"
    try:
        opened, closed = multiprocessing.Queue(), multiprocessing.Queue()
        started = time.monotonic()
        holders = [multiprocessing.Process(target=_hold_silent,
                                           args=(port, count // clients, opened, closed))
                   for _ in range(clients)]
        for holder in holders:
            holder.start()
        reads, writes = [], []
        done = threading.Event()

        def probe() -> None:
            with httpx.Client(timeout=30) as client:
                while not done.is_set():
                    try:
                        reads.append(client.get(f"{base}/query",
                                                params={"query": ASK}).status_code)
                        writes.append(client.post(
                            f"{base}/update", content="INSERT DATA { <urn:a> <urn:b> <urn:c> }",
                            headers={"Content-Type": "application/sparql-update",
                                     "Authorization": f"Bearer {TOKEN}"}).status_code)
                    except httpx.TransportError as exc:
                        reads.append(type(exc).__name__)
                    done.wait(0.2)

        prober = threading.Thread(target=probe)
        prober.start()
        total = sum(opened.get(timeout=120) for _ in holders)
        opened_s = time.monotonic() - started
        results = [closed.get(timeout=180) for _ in holders]
        done.set()
        prober.join()
        for holder in holders:
            holder.join()
        statuses: dict[str, int] = {}
        for _, part in results:
            for key, value in part.items():
                statuses[key] = statuses.get(key, 0) + value
        return {"silent_connections": total, "opened_in_s": round(opened_s, 1),
                "their_answers": statuses,
                "last_closed_after_s": round(max(last for last, _ in results) - started, 1),
                "header_timeout_s": 10.0,
                "fresh_reads": {str(s): reads.count(s) for s in set(reads)},
                "authenticated_writes": {str(s): writes.count(s) for s in set(writes)}}
    finally:
        stop(process)


def _worker_loop(block_fd: int, seen: multiprocessing.Queue) -> None:
    import mmap

    state = WorkerState(mmap.mmap(block_fd, len(states_block(1))), 0)
    step = 0
    while True:
        step += 1
        state.begin(step, float(step), 0.0)
        state.writing()
        if state.retiring():
            seen.put(step)  # seen; then wait until the owner clears it, and say so
            while state.retiring():
                pass
            seen.put(-step)
        state.end()


def retire(rounds: int = 10_000) -> dict:
    memfd = os.memfd_create("attack-states")
    os.ftruncate(memfd, len(states_block(1)))
    import mmap

    owner = WorkerState(mmap.mmap(memfd, len(states_block(1))), 0)
    seen: multiprocessing.Queue = multiprocessing.Queue()
    worker = multiprocessing.Process(target=_worker_loop, args=(memfd, seen))
    worker.start()
    lost = 0
    try:
        for _ in range(rounds):
            os.kill(worker.pid, signal.SIGSTOP)
            while Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] \
                    not in "tT":
                pass
            owner.retire()
            os.kill(worker.pid, signal.SIGCONT)
            try:
                seen.get(timeout=1.0)
            except queue.Empty:  # the order was lost: the worker never saw it
                lost += 1
                owner.clear()
                continue
            owner.clear()
            seen.get(timeout=10.0)  # the worker goes on
    finally:
        worker.kill()
        worker.join()
    return {"rounds": rounds, "retire_orders_lost": lost}


def writes(tmp: Path, count: int = 200) -> dict:
    process, port = serve(tmp / "store")
    latencies = []
    try:
        with httpx.Client() as client:
            for i in range(count):
                started = time.perf_counter()
                answer = client.post(f"http://127.0.0.1:{port}/update",
                                     content=f"INSERT DATA {{ <urn:w{i}> <urn:p> {i} }}",
                                     headers={"Content-Type": "application/sparql-update",
                                              "Authorization": f"Bearer {TOKEN}"})
                latencies.append(time.perf_counter() - started)
                assert answer.status_code == 204
            pairs, seen = [], []
            for i in range(PAIRS):  # a write, then a read that must see it
                started = time.perf_counter()
                client.post(f"http://127.0.0.1:{port}/update",
                            content=f"INSERT DATA {{ <urn:r{i}> <urn:p> {i} }}",
                            headers={"Content-Type": "application/sparql-update",
                                     "Authorization": f"Bearer {TOKEN}"})
                seen.append(client.get(f"http://127.0.0.1:{port}/query", params={
                    "query": f"ASK {{ <urn:r{i}> ?p ?o }}"}, headers={
                    "Accept": "application/sparql-results+json"}).json()["boolean"])
                pairs.append(time.perf_counter() - started)
        return {"updates": count, "p50_ms": round(statistics.median(latencies) * 1000, 2),
                "p90_ms": round(sorted(latencies)[int(count * 0.9)] * 1000, 2),
                "write_then_read_pairs": PAIRS,
                "pair_p50_ms": round(statistics.median(pairs) * 1000, 2),
                "reads_seeing_their_write": sum(seen)}
    finally:
        stop(process)


PARTS = {"chunks": chunks, "service": service, "moved": moved, "large": large,
         "silent": silent, "retire": lambda tmp: retire(), "writes": writes}


def main() -> None:
    chosen = sys.argv[1:] or list(PARTS)
    figures = {"load_average_before": os.getloadavg()}
    for name in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            figures[name] = PARTS[name](Path(tmp))
        print(json.dumps({name: figures[name]}), flush=True)
    figures["load_average_after"] = os.getloadavg()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
