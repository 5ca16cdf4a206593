"""Attacks on `kgctl serve` over loopback, each printing its figure (issue: no hang, no bypass,
no lost connection).

  chunks     malformed chunk sizes (negative, signed, spaced, prefixed, too large for 64 bits,
             not hex, short): each refused 400; then well-formed but huge sizes, their body
             stalled and flooded: the status each got (refused at the body timeout, 408, or
             past the body bound, 413) and when; and /healthz still answered at once
  service    SERVICE/LOAD to a loopback port of the caller's choice in every escape form: all
             refused 400, and the port never contacted
  upgrades   requests asking for another protocol (WebSocket, h2c, CONNECT): reads, an
             authenticated graph DELETE and update: all refused 400, the writes not made
  idle       1,000 idle kept-alive connections (each served once) while a runaway query is
             killed at its deadline and its worker replaced: then a query on each, how many
             are answered and how long it took
  large      an 8 MB answer (as CSV, then as JSON) on the 1,100th connection, read slowly
             (64 KB buffer, pauses): its status, bytes announced and delivered, and how long
             it took
  untaken    400 clients each ask for an 8 MB answer and read none of it: the serving
             process's peak memory, how many were cut off to keep the answers held within
             their bound; then one more reads its 8 MB answer slowly: delivered whole
  bodies     2,000 clients each send all but the last byte of a 1 MB query body and stop:
             what became of them (the bodies held are bounded: the stalled ones are cut off),
             the serving process's peak memory; then a fresh read and a fresh POST of a
             0.9 MB body: their statuses
  silent     25,000 silent connections (the serving process limited to 20,000 descriptors)
             while a fresh read and an authenticated write are sent every 0.2 s: their
             statuses, how the silent ones were answered, and how long the last stayed open
  stalled    the same with 25,000 connections that each send a request line and stop
  writes     p50 latency of 200 small authenticated updates in a row, then of 50 pairs of an
             update and a read that must see it (it waits for a checkpoint view)
  slow_to_read
             authenticated writes that take seconds to read (an update read for SERVICE/LOAD,
             20 MB of multipart/form-data): the worst wait of /healthz asked meanwhile
  forms      anonymous 1 MB forms to /sparql naming an update (empty fields, bad escapes):
             their statuses, and the worst wait of /healthz asked meanwhile

(A burst of runaway queries against the workers is measured by bench_service.py; the query
pool's decisions by tests/test_service_pool.py.)

Run: python scripts/attack_service.py [part ...]   (all parts by default)
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import httptools
import httpx
from bench_service import descendants, free_port  # beside this script
from pyoxigraph import Store

from kgctl.pipeline.seed import pack_quads
from kgctl.service.app import MAX_BODY_BYTES
from kgctl.service.config import DEFAULT_HEADER_TIMEOUT_S
from kgctl.service.room import connection_cap

TOKEN = "attack-token"
PAIRS = 50
STARTUP_S = 60.0
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }"
ASK = "ASK { GRAPH ?g { ?s ?p ?o } }"
CHUNK_SIZES = [b"-6", b"+6", b" 6", b"6 ", b"0x6", b"6 6", b"", b"g", b"F" * 40, b"5", b"-0",
               b"6\x00", b"1" * 17, b"FFFFFFFFFFFFFFFFF", b"-FFFFFFFF", b"\t6", b"6\r", b"0x10",
               b"+5", b"1" * 30, b"6 ;x"]
HUGE_CHUNK_SIZES = [b"FFFFFFFFFFFF", b"FFFFFFFFFFFFFFFF"]  # well-formed: 2^48 - 1, 2^64 - 1
BODY_TIMEOUT_S = 2.0  # `chunks` serves with it: a stalled body is refused this soon
IDLE_TIMEOUT_S = 5.0  # `idle`: the runaway's deadline
DESCRIPTORS = 20_000  # `silent`: the serving process's descriptor limit
LARGE = ("SELECT ?s14 WHERE { VALUES ?row { 1 2 3 4 5 6 7 8 } BIND(\"" + "x" * 64 + "\" AS ?s0) "
         + " ".join(f"BIND(CONCAT(?s{i}, ?s{i}) AS ?s{i + 1})" for i in range(14)) + " }")
# an 8 MB answer: 64 bytes doubled 14 times (1 MB) in each of 8 rows
ANSWER_BYTES = 8_388_629  # as CSV
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


def serve(store: Path, *options: str, descriptors: int | None = None,
          ) -> tuple[subprocess.Popen, int]:
    if not store.exists():
        seeded = Store(str(store))
        seeded.extend(pack_quads())
        seeded.flush()
        del seeded
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(store), "--port", str(port), "--update-token", TOKEN, *options],
        stderr=subprocess.DEVNULL, preexec_fn=None if descriptors is None else (
            lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))))
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


def response(sock: socket.socket, timeout: float = 10.0) -> tuple[int, int]:
    """(status, body bytes) of the next whole response on `sock`; status 0 when the server
    closed or reset the connection first. TimeoutError when none came within `timeout`."""
    sock.settimeout(timeout)
    done, size = [], [0]

    class Parse:
        def on_body(self, body: bytes) -> None:
            size[0] += len(body)

        def on_message_complete(self) -> None:
            done.append(True)

    parser = httptools.HttpResponseParser(Parse())
    while not done:
        try:
            data = sock.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            return 0, size[0]
        parser.feed_data(data)
    return parser.get_status_code(), size[0]


def chunked_post(port: int, size: bytes, body: bytes) -> tuple[int, float]:
    """(status, seconds) of a chunked POST /query announcing a chunk of `size` followed by
    `body` (sent beside the reading: a refusal can come before it is all sent)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/sparql-query\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + size + b"\r\n")
        sender = threading.Thread(target=lambda: _send_quietly(sock, body))
        sender.start()
        status = response(sock, 60)[0]
        sender.join()
        return status, round(time.monotonic() - started, 3)


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:  # the server refused and closed first
        pass


def chunks(tmp: Path) -> dict:
    process, port = serve(tmp / "store", "--body-timeout", str(BODY_TIMEOUT_S))
    try:
        statuses = {size.decode(errors="backslashreplace"): chunked_post(
            port, size, b"ASK {}\r\n0\r\n\r\n")[0] for size in CHUNK_SIZES}
        huge = {size.decode(): {
            "body_stalled": chunked_post(port, size, b"ASK {}"),
            "body_flooded": chunked_post(port, size, b"#" * (MAX_BODY_BYTES + 100_000))}
            for size in HUGE_CHUNK_SIZES}
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(request("/healthz"))
            health = response(sock)[0]
        return {"malformed_chunk_sizes": len(CHUNK_SIZES),
                "refused_400": list(statuses.values()).count(400),
                "not_400": {size: s for size, s in statuses.items() if s != 400},
                "huge_well_formed_status_and_s": huge, "body_timeout_s": BODY_TIMEOUT_S,
                "body_bound_bytes": MAX_BODY_BYTES, "healthz_after": health,
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


def upgrades(tmp: Path) -> dict:
    """Requests asking for another protocol (WebSocket, h2c, CONNECT), reads and authenticated
    writes: each must be refused 400 with nothing run, the writes unmade."""
    process, port = serve(tmp / "store")
    graph = next(q.graph_name.value for q in pack_quads())
    upgrade = "Connection: Upgrade\r\nUpgrade: {}\r\n"
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    insert = b"INSERT DATA { <urn:upgrade:s> <urn:upgrade:p> <urn:upgrade:o> }"
    heads = [request("/query?" + urlencode({"query": ASK}), upgrade.format(protocol))
             for protocol in ("websocket", "h2c")]
    heads += [f"DELETE /store?graph={graph} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
              f"{upgrade.format('h2c')}\r\n".encode(),
              f"POST /update HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}{upgrade.format('h2c')}"
              f"Content-Type: application/sparql-update\r\nContent-Length: {len(insert)}"
              "\r\n\r\n".encode() + insert,
              b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n"]
    try:
        statuses = []
        for head in heads:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(head)
                statuses.append(response(sock)[0])
        base = f"http://127.0.0.1:{port}"
        kept = httpx.get(f"{base}/store", params={"graph": graph}).status_code == 200
        inserted = httpx.get(f"{base}/query", params={
            "query": "ASK { GRAPH ?g { <urn:upgrade:s> ?p ?o } }"},
            headers={"Accept": "application/sparql-results+json"}).json()["boolean"]
        return {"requests": len(heads), "refused_400": statuses.count(400),
                "other_statuses": sorted(s for s in statuses if s != 400),
                "deleted_graph_still_there": kept, "update_made": inserted}
    finally:
        stop(process)


def query_on_each(socks: list[socket.socket], query: str, within_s: float) -> int:
    """Send `query` on every connection at once, then count the 200 answers in `within_s`."""
    for sock in socks:
        sock.sendall(request("/query?" + urlencode({"query": query})))
    deadline, answered = time.monotonic() + within_s, 0
    for sock in socks:
        try:
            answered += response(sock, max(0.05, deadline - time.monotonic()))[0] == 200
        except TimeoutError:
            pass
    return answered


def idle(tmp: Path, count: int = 1000) -> dict:
    # the idle connections are kept alive longer than the run (the default is 10 s)
    process, port = serve(tmp / "store", "--timeout", str(IDLE_TIMEOUT_S),
                          "--header-timeout", "120")
    socks = []
    try:
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        served = query_on_each(socks, ASK, 60)
        processes = set(descendants(process.pid))
        with socket.create_connection(("127.0.0.1", port)) as runaway:
            started = time.monotonic()
            runaway.sendall(request("/query?" + urlencode({"query": RUNAWAY})))
            runaway_status = response(runaway, 60)[0]
        runaway_s = time.monotonic() - started
        started = time.monotonic()
        answered = query_on_each(socks, ASK, 60)
        after = set(descendants(process.pid))
        return {"idle_connections": count, "served_once_200": served,
                "runaway_status": runaway_status, "runaway_refused_after_s": round(runaway_s, 2),
                "timeout_s": IDLE_TIMEOUT_S,
                "processes_ended": len(processes - after),
                "processes_started": len(after - processes),
                "then_answered_200": answered,
                "all_answered_in_s": round(time.monotonic() - started, 2)}
    finally:
        for sock in socks:
            sock.close()
        stop(process)


def read_slowly(port: int, query: str, accept: str) -> dict:
    """Ask `query` on a new connection and read the answer slowly (a 64 KB receive buffer,
    a pause every 256 KB): its status, bytes announced and delivered, and the time taken."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        started = time.monotonic()
        sock.sendall(request("/query?" + urlencode({"query": query}), f"Accept: {accept}\r\n"))
        sock.settimeout(60)
        data = bytearray()
        while b"\r\n\r\n" not in data:
            data += sock.recv(4096)
        head, _, rest = bytes(data).partition(b"\r\n\r\n")
        body = bytearray(rest)
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
    return {"status": int(head.split(b" ", 2)[1]), "announced_bytes": length,
            "delivered_bytes": len(body), "read_in_s": round(time.monotonic() - started, 2)}


def large(tmp: Path, before: int = 1099) -> dict:
    process, port = serve(tmp / "store")
    idle = []
    try:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(before)]
        for sock in idle:
            sock.sendall(request("/healthz"))
        assert all(response(sock)[0] == 200 for sock in idle)
        return {"connection_number": before + 1, **{  # each alone beside the idle ones
            accept: read_slowly(port, LARGE, accept)
            for accept in ("text/csv", "application/sparql-results+json")}}
    finally:
        for sock in idle:
            sock.close()
        stop(process)


def untaken(tmp: Path, count: int = 400) -> dict:
    """`count` clients each ask for an 8 MB answer and take none of it (a 4 KB receive
    buffer); once each was answered or cut off, one more reads its answer slowly."""
    process, port = serve(tmp / "store")
    socks = []
    try:
        before = memory_mb(process.pid, "VmRSS")
        for _ in range(count):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", port))
            sock.sendall(request("/query?" + urlencode({"query": LARGE}), "Accept: text/csv\r\n"))
            socks.append(sock)
        waiting, deadline = set(socks), time.monotonic() + 10 * STARTUP_S
        while waiting and time.monotonic() < deadline:  # until each answer began, or ended
            for sock in list(waiting):
                try:
                    sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                except BlockingIOError:
                    continue
                except ConnectionError:
                    pass
                waiting.discard(sock)
            time.sleep(0.1)
        peak = memory_mb(process.pid, "VmHWM")
        answers = [response(sock, timeout=STARTUP_S) for sock in socks]  # now taken
        return {"clients": count, "never_answered": len(waiting),
                "cut_off": sum(status == 0 for status, _ in answers),
                "delivered_whole": sum(answer == (200, ANSWER_BYTES) for answer in answers),
                "serving_process_mb_before": before, "serving_process_peak_mb": peak,
                "then_read_slowly": read_slowly(port, LARGE, "text/csv")}
    finally:
        for sock in socks:
            sock.close()
        stop(process)


def bodies(tmp: Path, count: int = 2000) -> dict:
    """`count` clients each send all but the last byte of a 1 MB query body and stop; then a
    fresh read and a fresh POST of a 0.9 MB body: what became of the stalled ones, how the
    fresh ones were answered, the serving process's peak memory."""
    process, port = serve(tmp / "store")
    socks, head = [], ("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                       "application/sparql-query\r\nContent-Length: {}\r\n\r\n")
    try:
        before = memory_mb(process.pid, "VmRSS")
        for _ in range(count):
            socks.append(socket.create_connection(("127.0.0.1", port)))
            _send_quietly(socks[-1], head.format(MAX_BODY_BYTES).encode()
                          + b"#" * (MAX_BODY_BYTES - 1))
        time.sleep(1.0)  # what was sent is read
        peak, now = memory_mb(process.pid, "VmHWM"), memory_mb(process.pid, "VmRSS")
        big = ASK + " #" + "x" * 900_000
        fresh = [response(sock)[0] for sock in (
            send_on_new(port, request("/query?" + urlencode({"query": ASK}))),
            send_on_new(port, (head.format(len(big)) + big).encode()))]
        return {"clients": count, "became": dict(Counter(map(became, socks))),
                "serving_process_mb_before": before, "serving_process_peak_mb": peak,
                "serving_process_mb_after": now, "then_fresh_read_and_fresh_post": fresh}
    finally:
        for sock in socks:
            sock.close()
        stop(process)


def became(sock: socket.socket) -> str:
    """What the server did with `sock` so far: its answer's status line, or nothing yet."""
    try:
        data = sock.recv(12, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return "waiting"
    except ConnectionError:
        data = b""
    return data.decode("latin-1") or "cut off (reset)"


def send_on_new(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(data)
    return sock


def memory_mb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith(field))


def _hold_silent(port: int, count: int, opened: multiprocessing.Queue,
                 closed: multiprocessing.Queue, first: bytes) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port)))
            if first:
                socks[-1].sendall(first)
        except OSError:
            break
    opened.put(len(socks))
    last, statuses = 0.0, {}
    for sock in socks:  # each is answered (408/503) or closed; wait for all of them
        sock.settimeout(120)
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except OSError as exc:
            data += f" ({type(exc).__name__})".encode()
        # e.g. "408 error: request headers not received in time"
        status, _, rest = data.partition(b"\r\n\r\n")
        key = f"{status[9:12].decode()} {rest.decode(errors='replace').strip()}".strip()
        statuses[key or "closed"] = statuses.get(key or "closed", 0) + 1
        last = time.monotonic()
    closed.put((last, statuses))


def silent(tmp: Path, count: int = 25_000, clients: int = 2, first: bytes = b"") -> dict:
    process, port = serve(tmp / "store", descriptors=DESCRIPTORS)
    base = f"http://127.0.0.1:{port}"
    try:
        opened, closed = multiprocessing.Queue(), multiprocessing.Queue()
        started = time.monotonic()
        holders = [multiprocessing.Process(target=_hold_silent,
                                           args=(port, count // clients, opened, closed,
                                                 first))
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
                "server_descriptors": DESCRIPTORS,
                "connection_cap": connection_cap(DESCRIPTORS), "their_answers": statuses,
                "last_closed_after_s": round(max(last for last, _ in results) - started, 1),
                "last_closed_after_all_opened_s": round(
                    max(last for last, _ in results) - started - opened_s, 1),
                "header_timeout_s": DEFAULT_HEADER_TIMEOUT_S,
                "fresh_reads": {str(s): reads.count(s) for s in set(reads)},
                "authenticated_writes": {str(s): writes.count(s) for s in set(writes)}}
    finally:
        stop(process)


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


def slow_to_read(tmp: Path) -> dict:
    """Authenticated writes that take seconds to read (a 0.7 MB update whose literals say
    "load", which has it read for SERVICE/LOAD; 20 MB of multipart/form-data): how long
    /healthz, asked back to back meanwhile, waited at worst (a query would also wait for the
    view holding the write), and the writes' statuses."""
    process, port = serve(tmp / "store")
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {TOKEN}"}
    document = b"".join(b'<urn:s%d> <urn:p> "v %d" .\n' % (i, i) for i in range(300_000))
    writes = {
        "update": lambda: httpx.post(f"{base}/update", headers={
            **auth, "Content-Type": "application/sparql-update"}, timeout=120, content=(
            "INSERT DATA { " + " ".join(f'<urn:u{i}> <urn:p> "load {i}" .'
                                        for i in range(20_000)) + " }")),
        "multipart": lambda: httpx.post(f"{base}/store", params={"graph": "urn:upload"},
                                        headers=auth, timeout=120, files=[
            ("a", ("a.nt", document, "application/n-triples")),
            ("b", ("b.nt", document, "application/n-triples"))])}
    figures = {}
    try:
        with httpx.Client(timeout=120) as client:
            for name, write in writes.items():
                answers: list[int] = []
                writer = threading.Thread(target=lambda w=write, a=answers: a.append(
                    w().status_code))
                waits = []
                writer.start()
                while writer.is_alive():
                    started = time.perf_counter()
                    client.get(f"{base}/healthz")  # the serving process's own answer
                    waits.append(time.perf_counter() - started)
                writer.join()
                figures[name] = {"status": answers[0], "reads": len(waits),
                                 "worst_read_ms": round(max(waits) * 1000, 1)}
        return figures
    finally:
        stop(process)


def forms(tmp: Path, senders: int = 4, each: int = 5) -> dict:
    """Anonymous clients post 1 MB forms to /sparql that name an update (a field named
    "upd%61te", then 400,000 empty fields or 330,000 bad escapes), `each` in turn: their
    statuses (401: no token) and how long /healthz, asked back to back meanwhile, waited at
    worst (the serving process reads these: decoding one took it up to 0.9 s)."""
    process, port = serve(tmp / "store")
    base = f"http://127.0.0.1:{port}"
    bodies = [b"upd%61te=CLEAR+ALL" + b"&a" * 400_000, b"upd%61te=CLEAR+ALL&x=" + b"%" * 990_000]
    statuses: Counter = Counter()

    def send(index: int) -> None:
        with httpx.Client(timeout=120) as client:
            for n in range(each):
                statuses[client.post(f"{base}/sparql", content=bodies[(index + n) % 2], headers={
                    "Content-Type": "application/x-www-form-urlencoded"}).status_code] += 1

    try:
        senders_ = [threading.Thread(target=send, args=(i,)) for i in range(senders)]
        waits = []
        with httpx.Client(timeout=120) as client:
            for sender in senders_:
                sender.start()
            while any(sender.is_alive() for sender in senders_):
                started = time.perf_counter()
                client.get(f"{base}/healthz")
                waits.append(time.perf_counter() - started)
        return {"forms": senders * each, "statuses": dict(statuses), "reads": len(waits),
                "worst_read_ms": round(max(waits) * 1000, 1),
                "p50_read_ms": round(statistics.median(waits) * 1000, 2)}
    finally:
        stop(process)


PARTS = {"chunks": chunks, "service": service, "upgrades": upgrades, "idle": idle, "large": large,
         "untaken": untaken, "bodies": bodies, "silent": silent,
         "stalled": partial(silent, first=b"GET /healthz HTTP/1.1\r\n"), "writes": writes,
         "slow_to_read": slow_to_read, "forms": forms}


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
