"""HTTP/1.1 connections as the workers and the serving process share them: pipelined requests,
100-continue, large uploads handed to the serving process, connections that move off a worker
busy with a long query, and a worker past its memory cap."""

from __future__ import annotations

import os
import resource
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest
from pyoxigraph import Store
from service_helpers import PAPER_GRAPH, Responses, live_server, sample_store

from kgctl.service.config import ServiceConfig

TOKEN = "connections-token"
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }"
ASK = "ASK { GRAPH ?g { ?s ?p ?o } }"
TIMEOUT_S = 4.0
READ_S = 30.0


@pytest.fixture(scope="module")
def store() -> Store:
    return sample_store()


@pytest.fixture(scope="module")
def url(store: Store) -> Iterator[str]:
    config = ServiceConfig(update_token=TOKEN, timeout_s=TIMEOUT_S, workers=1)
    with live_server(store, config) as base:
        yield base


def responses(sock: socket.socket, count: int, timeout: float | None = READ_S
              ) -> list[tuple[int, bytes]]:
    """`count` whole responses read from `sock`, in order (`timeout` None: the socket's)."""
    parsed = Responses()
    if timeout is not None:
        sock.settimeout(timeout)
    while len(parsed.done) < count:
        data = sock.recv(65536)
        assert data, f"connection closed after {len(parsed.done)} responses"
        parsed.feed(data)
    return parsed.done


def request(method: str, target: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1",
             *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items())]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)))


def test_pipelined_requests_are_answered_in_order(url: str) -> None:
    with connect(url) as sock:
        sock.sendall(request("GET", "/healthz") + request(
            "POST", "/query", ASK.encode(), Content_Type="application/sparql-query",
            Accept="application/sparql-results+json") + request("GET", "/papers"))
        (first, _), (second, answer), (third, papers) = responses(sock, 3)
    assert (first, second, third) == (200, 200, 200)
    assert b'"boolean":true' in answer.replace(b" ", b"") and PAPER_GRAPH.encode() in papers


@pytest.mark.parametrize("garbage, status", [
    (b"NOT HTTP AT ALL\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
     400),
    (b"GET / HTTP/1.1\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", 431),
    (b"PUT /store?default HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
    *((b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
       + size + b"\r\nASK {}\r\n0\r\n\r\n", 400)
      for size in (b"-6", b"+6", b" 6", b"0x6", b"6 6", b"", b"g", b"F" * 40, b"5", b"0x10",
                   b"+5", b"1" * 30)),
    (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 6\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n6\r\nASK {}\r\n0\r\n\r\n", 400),
    (b"POST /update HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"1\r\nx\r\n0\r\nX Y\r\n\r\n", 400),
    *((b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query"
       b"\r\n" + codings + b"\r\n\r\n6\r\nASK {}\r\n0\r\n\r\n", 501)
      for codings in (b"Transfer-Encoding: gzip, chunked", b"Transfer-Encoding: identity,chunked",
                      b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked")),
], ids=["not-http", "two-lengths", "huge-head", "two-lengths-upload",
        *(f"chunk-size-{name}" for name in ("negative", "plus", "space", "0x", "two", "empty",
                                            "not-hex", "huge", "short", "0x10", "plus5",
                                            "30-digits")),
        "length-and-chunked", "bad-trailer-on-a-write", "gzip-chunked", "identity-chunked",
        "gzip-header-then-chunked"])
def test_malformed_requests_are_refused_and_the_server_goes_on(url: str, garbage: bytes,
                                                               status: int) -> None:
    with connect(url) as sock:
        sock.sendall(garbage)
        assert responses(sock, 1)[0][0] == status
    assert httpx.get(f"{url}/query", params={"query": ASK}).status_code == 200


@pytest.mark.parametrize("first", [
    request("GET", "/query?" + urlencode({"query": ASK})),  # answered by a worker
    request("GET", "/healthz"),  # by the serving process
], ids=["worker", "local"])
@pytest.mark.parametrize("malformed, status", [
    (b"NOT HTTP AT ALL\r\n\r\n", 400),
    (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"-6\r\nASK {}\r\n0\r\n\r\n", 400),
    (request("POST", "/query", Content_Type="application/sparql-query",
             Content_Length=str(10**9)), 413),
    (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
     501),
], ids=["not-http", "bad-chunk", "too-large", "unknown-coding"])
def test_a_refusal_comes_after_the_answers_owed_to_the_requests_before_it(
        url: str, first: bytes, malformed: bytes, status: int) -> None:
    """A client reads answers in the order it asked: a malformed request pipelined behind a
    good one is refused after that one's answer, not in its place."""
    with connect(url) as sock:
        sock.sendall(first + first + malformed)
        assert [s for s, _ in responses(sock, 3)] == [200, 200, status]
        assert sock.recv(1) == b""  # then the connection ends


def test_expect_100_continue_gets_its_interim_answer(url: str) -> None:
    body = ASK.encode()
    with connect(url) as sock:
        sock.sendall(request("POST", "/query", Content_Type="application/sparql-query",
                             Content_Length=str(len(body)), Expect="100-continue"))
        sock.settimeout(READ_S)
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        assert responses(sock, 1)[0][0] == 200


def test_large_upload_is_read_by_the_serving_process_and_the_connection_goes_on(
        url: str) -> None:
    graph = "https://example.org/large-upload"
    triples = "".join(f"<urn:s{i}> <urn:p> \"{'x' * 40} {i}\" .\n" for i in range(6000))
    assert len(triples) > 256 * 1024  # more than a worker reads before taking a request
    with connect(url) as sock:
        sock.sendall(request("PUT", f"/store?graph={graph}", triples.encode(),
                             Content_Type="application/n-triples",
                             Authorization=f"Bearer {TOKEN}")
                     + request("GET", f"/store?graph={graph}&format=nt"))
        (put, _), (get, body) = responses(sock, 2)
    assert (put, get) == (201, 200) and body.count(b"\n") == 6000


def test_a_cheap_query_is_not_kept_behind_a_long_one(url: str) -> None:
    """With one seat, the runaway's worker leaves it for the long lane and the spare takes it:
    the cheap query is answered long before the runaway's deadline."""
    with connect(url) as runaway, connect(url) as cheap:
        cheap.sendall(request("GET", "/healthz"))
        assert responses(cheap, 1)[0][0] == 200  # both connections are now taken
        started = time.monotonic()
        runaway.sendall(request("GET", "/query?" + urlencode({"query": RUNAWAY})))
        time.sleep(0.1)  # let the runaway start first: the cheap query must not wait for it
        cheap.sendall(request("GET", "/query?" + urlencode({"query": ASK}),
                              Accept="application/sparql-results+json"))
        assert responses(cheap, 1)[0][0] == 200
        waited = time.monotonic() - started
        status, body = responses(runaway, 1)[0]
    assert waited < TIMEOUT_S - 1
    assert status == 503 and b"timed out" in body


DOUBLINGS = 24  # a 1 GB string: past the cap long before the byte limit
MEMORY_BOMB = f'SELECT ?s{DOUBLINGS} WHERE {{ BIND("{"x" * 64}" AS ?s0) ' + " ".join(
    f"BIND(CONCAT(?s{i}, ?s{i}) AS ?s{i + 1})" for i in range(DOUBLINGS)) + " }"
NESTED = "SELECT * {" + "{" * 20_000 + "}" * 20_000 + "}"  # past the parser's 8 MB stack
UNLIMITED_STACK = resource.getrlimit(resource.RLIMIT_STACK)[0] == resource.RLIM_INFINITY


@pytest.mark.parametrize("query", [MEMORY_BOMB, pytest.param(NESTED, marks=pytest.mark.skipif(
    UNLIMITED_STACK, reason="no stack limit here: the parser does not overflow"))],
    ids=["memory", "nesting"])
def test_a_query_that_ends_its_worker_is_answered_500_and_the_next_is_served(
        store: Store, query: str) -> None:
    config = ServiceConfig(worker_memory_mb=512, max_bytes=4_000_000_000, workers=1)
    with live_server(sample_store(), config) as base:
        results: list[httpx.Response] = []
        thread = threading.Thread(target=lambda: results.append(httpx.post(
            f"{base}/query", content=query, timeout=READ_S,
            headers={"Content-Type": "application/sparql-query"})))
        thread.start()
        thread.join(READ_S)
        assert results[0].status_code == 500 and "narrow the query" in results[0].text
        assert httpx.get(f"{base}/query", params={"query": ASK}).status_code == 200


IDLE_CONNECTIONS = 400


def test_hundreds_of_idle_connections_are_all_answered_beside_a_long_query(url: str) -> None:
    """With one seat, hundreds of kept-alive connections ask at once while a runaway holds a
    worker: each is answered, and once closed none stays open in the serving process (this
    test's own process). (The previous design lost some when it moved them between
    workers.)"""
    before = len(os.listdir("/proc/self/fd"))
    idle = [connect(url) for _ in range(IDLE_CONNECTIONS)]
    try:
        for sock in idle:
            sock.sendall(request("GET", "/healthz"))
        for sock in idle:
            assert responses(sock, 1)[0][0] == 200
        with connect(url) as runaway:
            runaway.sendall(request("GET", "/query?" + urlencode({"query": RUNAWAY})))
            for sock in idle:
                sock.sendall(request("GET", "/query?" + urlencode({"query": ASK}),
                                     Accept="application/sparql-results+json"))
            deadline = time.monotonic() + TIMEOUT_S
            answered = 0
            for sock in idle:
                sock.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    answered += responses(sock, 1, timeout=None)[0][0] == 200
                except TimeoutError:
                    pass
            assert answered == IDLE_CONNECTIONS
            assert responses(runaway, 1)[0][0] == 503
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + READ_S
    while len(os.listdir("/proc/self/fd")) > before + 16 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir("/proc/self/fd")) <= before + 16


MOVE_HEADER_S, MOVE_BODY_S = 2.0, 3.0
LATE_S = 0.6  # past its deadline a slow request is cut off within this (a busy machine)


def test_slow_requests_keep_their_deadline_while_workers_change(store: Store) -> None:
    """A trickled head, a trickled body and a silent connection are cut off at their own
    deadlines while a long query retires a worker and a spare takes its seat: trickling bytes
    does not start their clocks again."""
    config = ServiceConfig(timeout_s=TIMEOUT_S, workers=1, header_timeout_s=MOVE_HEADER_S,
                           body_timeout_s=MOVE_BODY_S)
    with live_server(sample_store(), config) as base, connect(base) as head, \
            connect(base) as body, connect(base) as silent, connect(base) as runaway:
        started = time.monotonic()
        head.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        body.sendall(request("POST", "/query", Content_Type="application/sparql-query",
                             Content_Length="100"))
        deadlines = {head: started + MOVE_HEADER_S, body: started + MOVE_BODY_S,
                     silent: started + MOVE_HEADER_S}
        ended: dict[socket.socket, tuple[float, bytes]] = {}
        moved = False
        for sock in deadlines:
            sock.setblocking(False)
        while len(ended) < len(deadlines) and time.monotonic() < started + TIMEOUT_S + 2:
            if not moved and time.monotonic() > started + 1:  # retire their worker
                runaway.sendall(request("GET", "/query?" + urlencode({"query": RUNAWAY})))
                moved = True
            for sock in deadlines:
                if sock in ended:
                    continue
                try:
                    ended[sock] = (time.monotonic(), sock.recv(4096))
                    continue
                except BlockingIOError:
                    pass
                if sock is not silent:
                    try:
                        sock.sendall(b"X" if sock is head else b" ")
                    except OSError:
                        pass
            time.sleep(0.1)
        for sock, deadline in deadlines.items():
            assert sock in ended, "never cut off"
            when, answer = ended[sock]
            assert answer.startswith(b"HTTP/1.1 408") and deadline - 0.1 < when < deadline + LATE_S


@pytest.mark.parametrize("authorization, status", [(None, 401), ("Bearer wrong", 403)])
def test_a_large_upload_is_refused_on_its_head_without_the_token(
        url: str, authorization: str | None, status: int) -> None:
    """The body (50 MB announced, none sent) is never waited for, nor buffered."""
    headers = {"Content_Type": "application/n-triples", "Content_Length": "50000000"}
    if authorization:
        headers["Authorization"] = authorization
    with connect(url) as sock:
        sock.sendall(request("PUT", "/store?graph=urn:x:large", **headers))
        assert responses(sock, 1, timeout=5.0)[0][0] == status
