"""Refusals that keep the endpoint safe: SERVICE to arbitrary hosts, slow clients, huge
results, foreign Host headers, and a burst of runaway queries (killed, cheap queries served)."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from pyoxigraph import Store
from service_helpers import STARTUP_S, free_port, live_server, sample_store

from kgctl.service.config import ServiceConfig
from kgctl.service.pool import Pool
from kgctl.service.workers import Worker, cpu_s

TIMEOUT_S = 0.5
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }"
PROBE = "ASK { GRAPH ?g { ?s a <https://www.theworldavatar.com/kg/OntoSyn/HeatChill> } }"
RUNAWAYS = 24
PROBE_BOUND_S = 1.0
BURST_TIMEOUT_S = 5.0  # runaways of the burst run this long unless stopped earlier
# a probe stuck behind the burst would wait BURST_TIMEOUT_S; the bound leaves room for a busy
# machine (scripts/bench_service.py measures the figure itself)
BURST_PROBE_BOUND_S = 2.5
SLOW_CLIENTS = 50
HEADER_TIMEOUT_S = 2.0
BODY_TIMEOUT_S = 1.0
# 8 rows, each a string doubled 20 times from 64 bytes: 537 MB if nothing stops it
DOUBLINGS = 20
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
READ_S = 30.0
STOP_S = 3.0  # a stop kills a running update at once (a bound for a busy machine)


def concat_bomb() -> str:
    binds = " ".join(f"BIND(CONCAT(?s{i}, ?s{i}) AS ?s{i + 1})" for i in range(DOUBLINGS))
    return (f'SELECT ?s{DOUBLINGS} WHERE {{ VALUES ?row {{ 1 2 3 4 5 6 7 8 }} '
            f'BIND("{"x" * 64}" AS ?s0) {binds} }}')


@contextmanager
def listening_victim() -> Iterator[tuple[socket.socket, str]]:
    """A socket the server must never connect to, and its host:port. On 127.0.0.2: a test
    that connects to a port nothing listened on (a refused connection) may be given this
    port's number on 127.0.0.1, and would be taken for the server."""
    with socket.socket() as victim:
        victim.bind(("127.0.0.2", 0))
        victim.listen()
        victim.settimeout(0.3)
        yield victim, f"127.0.0.2:{victim.getsockname()[1]}"


@pytest.fixture(scope="module")
def store() -> Store:
    return sample_store()


@pytest.fixture(scope="module")
def url(store: Store):
    config = ServiceConfig(timeout_s=TIMEOUT_S, max_bytes=1_000_000, workers=4, long_queries=2,
                           header_timeout_s=HEADER_TIMEOUT_S, body_timeout_s=BODY_TIMEOUT_S)
    with live_server(store, config) as base:
        yield base


@pytest.mark.parametrize("template", [
    "SELECT * {{ SERVICE <{target}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ \\u0053ERVICE SILENT <{target}> {{ ?s ?p ?o }} }}",
    "SELECT * {{ BIND(<{target}> AS ?e) SERVICE ?e {{ ?s ?p ?o }} }}",
    "select * {{ service <{target}> {{ ?s ?p ?o }} }}",
    # escaped local names: a lexer that takes `\#` for a comment or `\'` for a string misses
    # the SERVICE behind them
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\# ?o . SERVICE <{target}> {{ ?s ?p ?o }} }}",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\' ?o . SERVICE <{target}> {{ ?s ?p ?o }} }} #'",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\\" ?o . SERVICE <{target}> {{ ?s ?p ?o }} }}",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:\\#a ?o . SERVICE <{target}> {{ ?s ?p ?o }} }}",
    "PREFIX ex: <urn:x#> SELECT * {{ ?s ex:a\\( ?o . SERVICE <{target}> {{ ?s ?p ?o }} }}",
    # an escaped quote inside a string: a pre-pass that decodes it ends the string there
    "SELECT * {{ OPTIONAL {{ ?s ?p \"a\\u0022@en, \" }} . SERVICE <{target}> {{ ?s ?p ?o }} "
    "OPTIONAL {{ ?s ?p \", \\u0022\" }} }}",
    # a comment that pyoxigraph ends at CR
    "SELECT * {{ BIND(1 AS ?o) # x\r SERVICE <{target}> {{ ?a ?b ?c }} \n }}",
])
def test_service_to_another_host_is_refused_without_contacting_it(url: str,
                                                                  template: str) -> None:
    with listening_victim() as (victim, host):
        target = f"http://{host}/sparql"
        response = httpx.get(f"{url}/query", params={"query": template.format(target=target)})
        assert response.status_code == 400 and "--allow-service" in response.text
        with pytest.raises(TimeoutError):
            victim.accept()


def test_load_to_another_host_is_refused_without_contacting_it(store: Store) -> None:
    with listening_victim() as (victim, host), \
            live_server(sample_store(), ServiceConfig(update_token="t")) as base:
        target = f"http://{host}/data.ttl"
        for update in (f"LOAD <{target}>", f"PREFIX ex: <urn:x#> INSERT {{ ex:a\\# ex:p 1 }} "
                       f"WHERE {{}} ; LOAD SILENT <{target}> INTO GRAPH <urn:g>"):
            response = httpx.post(f"{base}/update", data={"update": update},
                                  headers={"Authorization": "Bearer t"})
            assert response.status_code == 400 and "--allow-service" in response.text
            with pytest.raises(TimeoutError):
                victim.accept()


def test_result_over_the_byte_limit_is_refused(store: Store) -> None:
    """The first 67 MB row already passes the byte limit: refused, the other rows never made."""
    with live_server(sample_store(), ServiceConfig(timeout_s=60, max_bytes=1_000_000)) as base:
        response = httpx.get(f"{base}/query", params={"query": concat_bomb()}, timeout=60)
    assert response.status_code == 422, response.text
    assert "larger than 1000000 bytes" in response.text


def test_graph_download_obeys_the_byte_limit(url: str) -> None:
    response = httpx.get(f"{url}/store", params={"default": ""})
    assert response.status_code == 200
    papers = httpx.get(f"{url}/papers").json()
    big = max(papers, key=lambda p: p["triples"])
    response = httpx.get(f"{url}/store", params={"graph": big["graph"], "format": "nt"})
    assert response.status_code == (422 if big["triples"] * 150 > 1_000_000 else 200)


def test_foreign_host_header_is_refused(url: str) -> None:
    response = httpx.get(f"{url}/healthz", headers={"Host": "attacker.example"})
    assert response.status_code == 400 and "--allowed-host" in response.text
    assert httpx.get(f"{url}/healthz", headers={"Host": "localhost:1"}).status_code == 200


def test_slow_clients_are_cut_off_and_do_not_block_others(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(SLOW_CLIENTS)]
    try:
        for sock in slow:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        started = time.monotonic()
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert time.monotonic() - started < PROBE_BOUND_S
        for sock in slow:
            sock.settimeout(HEADER_TIMEOUT_S + 10)
            answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 408") and sock.recv(4096) == b""
    finally:
        for sock in slow:
            sock.close()



def test_slow_body_is_refused(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                     b"Content-Type: application/sparql-query\r\n\r\nASK")  # 97 bytes owed
        sock.settimeout(BODY_TIMEOUT_S + 10)
        assert sock.recv(4096).startswith(b"HTTP/1.1 408")


def descendants(root: int) -> list[int]:
    """Every live process started under `root` (the writer, the fork server, the workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def descendants_cpu_ticks(root: int) -> int:
    """CPU ticks used so far by every process started under `root` (the workers)."""
    return sum(cpu_ticks(child) for child in descendants(root))


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[str, int]]:
    """(URL, pid) of a `kgctl serve` process over its own copy of the MOP-30 graph."""
    directory = tmp_path_factory.mktemp("burst")
    sample_store(directory)  # dropped at once: the server process must own the directory
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(directory), "--port", str(port), "--timeout", str(BURST_TIMEOUT_S)],
        stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            httpx.get(f"{url}/healthz")
            break
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, "no server"
            time.sleep(0.1)
    try:
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(STARTUP_S)


def test_runaway_burst_is_killed_while_cheap_queries_answer(served: tuple[str, int]) -> None:
    url, pid = served
    probes: list[float] = []
    refused: list[int] = []  # a cheap probe is never taken for a computing query
    stop = threading.Event()

    def probe() -> None:
        with httpx.Client() as client:
            while not stop.is_set():
                started = time.monotonic()
                status = client.get(f"{url}/query", params={"query": PROBE}).status_code
                probes.append(time.monotonic() - started)
                if status != 200:
                    refused.append(status)
                stop.wait(0.05)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        with ThreadPoolExecutor(RUNAWAYS) as pool:
            statuses = list(pool.map(lambda _: httpx.get(
                f"{url}/query", params={"query": RUNAWAY}, timeout=30).status_code,
                range(RUNAWAYS)))
    finally:
        stop.set()
        prober.join()
    assert statuses == [503] * RUNAWAYS
    assert refused == []
    assert len(probes) >= 3 and max(probes) < BURST_PROBE_BOUND_S
    before = descendants_cpu_ticks(pid)
    time.sleep(0.5)
    assert descendants_cpu_ticks(pid) - before < 0.2 * CLOCK_TICKS  # nothing computes on


def test_workers_end_with_a_killed_server(tmp_path: Path) -> None:
    """A runaway query stops even when the process that watches its deadline is SIGKILLed."""
    sample_store(tmp_path / "store")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(tmp_path / "store"), "--port", str(port), "--timeout", "600"],
        stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            httpx.get(f"{url}/healthz")
            break
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, "no server"
            time.sleep(0.1)
    runaway = threading.Thread(target=lambda: pytest.raises(httpx.TransportError, httpx.get,
                                                            f"{url}/query",
                                                            params={"query": RUNAWAY},
                                                            timeout=STARTUP_S))
    spawned = descendants(process.pid)
    assert len(spawned) >= 3  # the writer, the fork server and its workers
    before = {pid: cpu_ticks(pid) for pid in spawned}
    runaway.start()
    started = time.monotonic()
    while all(cpu_ticks(pid) - ticks < CLOCK_TICKS // 5 for pid, ticks in before.items()):
        assert time.monotonic() - started < STARTUP_S, "the runaway query did not start"
        time.sleep(0.05)
    process.kill()
    process.wait(STARTUP_S)
    started = time.monotonic()
    while any(alive(pid) for pid in spawned):
        assert time.monotonic() - started < STARTUP_S, "workers outlived the server"
        time.sleep(0.05)
    runaway.join(STARTUP_S)


DESCRIPTORS = 600  # the served process's limit: room for about 340 connections
CROWD = 400
IDLE_CROWD = 600


def start_serve(directory: Path, *args: str, descriptors: int | None = None
                ) -> tuple[subprocess.Popen, str]:
    """A `kgctl serve` process in its own session (as from a terminal) and its URL, once it
    answers; its stderr is a pipe."""
    def limit() -> None:
        if descriptors:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(directory), "--port", str(port), *args], stderr=subprocess.PIPE,
        preexec_fn=limit, start_new_session=True)
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz")
            return process, f"http://127.0.0.1:{port}"
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, "no server"
            time.sleep(0.1)


def test_at_the_descriptor_limit_slow_connections_give_way_and_nothing_is_dropped(
        tmp_path: Path) -> None:
    """More silent connections than descriptors allow: the oldest are cut off (408) so fresh
    reads and writes are answered; a crowd that asks at once is answered, 200 or 503 (never
    closed without a status). Who gives way is `Room`'s (tests/test_service_http.py)."""
    sample_store(tmp_path)
    process, url = start_serve(tmp_path, "--update-token", "t", descriptors=DESCRIPTORS)
    port = int(url.rsplit(":", 1)[1])
    crowd: list[socket.socket] = []
    try:
        crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(CROWD)]
        time.sleep(1.0)  # silent for a second: only then may a connection be cut off for room
        assert httpx.get(f"{url}/query", params={"query": PROBE}).status_code == 200
        assert httpx.post(f"{url}/update", content="INSERT DATA { <urn:a> <urn:b> <urn:c> }",
                          headers={"Content-Type": "application/sparql-update",
                                   "Authorization": "Bearer t"}).status_code == 204
        crowd[0].settimeout(READ_S)
        assert crowd[0].recv(4096).startswith(b"HTTP/1.1 408")
        for sock in crowd:
            sock.close()
        crowd = []
        for _ in range(IDLE_CROWD):
            crowd.append(socket.create_connection(("127.0.0.1", port)))
            crowd[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        statuses = []
        for sock in crowd:
            sock.settimeout(READ_S)
            statuses.append(sock.recv(4096)[:12])
        assert set(statuses) <= {b"HTTP/1.1 200", b"HTTP/1.1 503"}
        assert statuses[0] == b"HTTP/1.1 200"
        # more than the cap asked: some were refused, or answered ones gave way (closed
        # quietly after their answer) to those arriving later (the short listen backlog
        # spreads a crowd's arrival)
        given_way = sum(ended(sock) for sock, status in zip(crowd, statuses, strict=True)
                        if status == b"HTTP/1.1 200")
        assert b"HTTP/1.1 503" in statuses or given_way
    finally:
        for sock in crowd:
            sock.close()
        process.terminate()
        process.wait(STARTUP_S)


def ended(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (its one answer read)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False


def test_ctrl_c_stops_the_server_without_a_traceback(tmp_path: Path) -> None:
    sample_store(tmp_path)
    process, url = start_serve(tmp_path)
    assert httpx.get(f"{url}/query", params={"query": PROBE}).status_code == 200
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, stderr = process.communicate(timeout=STARTUP_S)
    assert process.returncode == 0 and b"Traceback" not in stderr


def test_sigterm_stops_a_server_busy_with_an_update_which_is_not_applied(
        tmp_path: Path) -> None:
    sample_store(tmp_path)
    process, url = start_serve(tmp_path, "--update-token", "t")
    marker = "urn:kgctl:test:long-update"
    update = (f"INSERT {{ <{marker}> <{marker}> ?n }} WHERE {{ SELECT (COUNT(*) AS ?n) "
              "WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } } }")
    answers: list[int] = []

    def send() -> None:  # answered 500 (nothing written) or cut off as the service stops
        try:
            answers.append(httpx.post(f"{url}/update", content=update, timeout=STARTUP_S,
                                      headers={"Content-Type": "application/sparql-update",
                                               "Authorization": "Bearer t"}).status_code)
        except httpx.TransportError:
            answers.append(0)

    sender = threading.Thread(target=send)
    writer, = (pid for pid in descendants(process.pid) if b"store_writer" in command(pid))
    before = cpu_ticks(writer)  # the update runs in the writer process
    sender.start()
    started = time.monotonic()
    while cpu_ticks(writer) - before < CLOCK_TICKS // 2:
        assert time.monotonic() - started < STARTUP_S, "the update did not start"
        time.sleep(0.05)
    stopping = time.monotonic()
    process.terminate()
    _, stderr = process.communicate(timeout=STARTUP_S)
    assert time.monotonic() - stopping < STOP_S
    assert b"not applied" in stderr and b"Traceback" not in stderr, stderr.decode()
    sender.join(STARTUP_S)
    assert answers in ([0], [500])
    assert not Store.read_only(str(tmp_path)).query(f"ASK {{ <{marker}> ?p ?o }}")


def test_a_workers_cpu_time_is_read_to_below_a_tick() -> None:
    """/proc/<pid>/stat counts CPU time in 10 ms ticks: a cheap query that crossed one was
    taken for a computing one, and refused 503 while the long lane was full."""
    me = Worker(process=SimpleNamespace(pid=os.getpid()), pidfd=-1)
    before, started = cpu_s(me), time.thread_time()
    while time.thread_time() - started < 0.003:
        pass
    assert 0.002 < cpu_s(me) - before < 0.009


def test_workers_stopped_by_sigstop_are_replaced(store: Store) -> None:
    """Every query worker frozen by someone else, idle: each is killed within about a second
    and replaced, and a query is answered."""
    before = set(descendants(os.getpid()))
    with live_server(sample_store(), ServiceConfig(workers=1)) as base:
        assert httpx.get(f"{base}/query", params={"query": PROBE}).status_code == 200
        # the fork server (a child of this process) forked the workers
        workers = [pid for pid in set(descendants(os.getpid())) - before
                   if b"forkserver" in command(parent(pid))]
        assert len(workers) == 2  # a seat and a spare
        for worker in workers:
            os.kill(worker, signal.SIGSTOP)
        started = time.monotonic()
        while any(alive(worker) for worker in workers):
            assert time.monotonic() - started < READ_S
            time.sleep(0.05)
        answer = httpx.get(f"{base}/query", params={"query": PROBE}, timeout=READ_S)
        assert answer.status_code == 200


def parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:  # it ended
        return 0


def command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_failing_watchdog_step_keeps_deadlines_and_fails_healthz(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self, now: float) -> list:
        raise RuntimeError("a fault in the watchdog")

    monkeypatch.setattr(Pool, "check", broken)
    with live_server(sample_store(), ServiceConfig(timeout_s=TIMEOUT_S, workers=2)) as base:
        started = time.monotonic()
        answer = httpx.get(f"{base}/query", params={"query": RUNAWAY}, timeout=READ_S)
        assert answer.status_code == 503 and time.monotonic() - started < TIMEOUT_S + 2
        started = time.monotonic()  # the heartbeat goes stale within 2 s
        while (health := httpx.get(f"{base}/healthz")).status_code == 200:
            assert time.monotonic() - started < READ_S
            time.sleep(0.1)
        assert health.status_code == 500 and "watchdog" in health.text
