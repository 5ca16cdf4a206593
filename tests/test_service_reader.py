"""A query worker's plain path for reads (`query_reader`), in process: for every kind of read
of /query and /sparql, refused or answered, it gives the answer the service's ASGI app (as a
worker wraps it) gives to the same request."""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlencode

import pytest
from pyoxigraph import Store
from service_helpers import PAPER_GRAPH, sample_quads

from kgctl.service.app import PREPARED_BYTES, QUERY_PATHS, Service, create_app, query_reader
from kgctl.service.asgi import Gathered, Head
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.hosts import HostGuard

JSON = (b"accept", b"application/sparql-results+json")
FORM = (b"content-type", b"application/x-www-form-urlencoded")
HOST = (b"host", b"127.0.0.1:7878")
SELECT = f"SELECT ?s WHERE {{ GRAPH <{PAPER_GRAPH}> {{ ?s a ?c }} }} ORDER BY ?s LIMIT 3"
CASES = {  # name: (method, path, query parameters, extra headers, body, status)
    "ask": ("GET", "/query", {"query": "ASK {}"}, [JSON], b"", 200),
    "select as csv": ("GET", "/sparql", {"query": SELECT, "format": "csv"}, [], b"", 200),
    "select by union": ("GET", "/query", {"query": "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }",
                                          "union-default-graph": ""}, [JSON], b"", 200),
    "head": ("HEAD", "/query", {"query": SELECT}, [JSON], b"", 200),
    "description": ("GET", "/sparql", {}, [(b"accept", b"text/turtle")], b"", 200),
    "posted form": ("POST", "/query", {}, [FORM, JSON],
                    urlencode({"query": SELECT}).encode(), 200),
    "posted query": ("POST", "/sparql", {}, [(b"content-type", b"application/sparql-query")],
                     SELECT.encode(), 200),
    "update to /query": ("POST", "/query", {}, [FORM],
                         urlencode({"update": "CLEAR ALL"}).encode(), 400),
    "wrong method": ("PUT", "/query", {"query": "ASK {}"}, [], b"", 405),
    "bad query": ("GET", "/query", {"query": "SELEKT"}, [], b"", 400),
    "remote endpoint": ("GET", "/query", {"query": "SELECT * { SERVICE <http://127.0.0.1:9/> "
                                                   "{ ?s ?p ?o } }"}, [], b"", 400),
    "unacceptable": ("GET", "/query", {"query": "ASK {}"}, [(b"accept", b"image/png")], b"",
                     406),
    "unsupported body": ("POST", "/query", {}, [(b"content-type", b"text/plain")], b"ASK {}",
                         415),
    "foreign host": ("GET", "/query", {"query": "ASK {}"}, [(b"host", b"evil.example")], b"",
                     400),
    "two hosts": ("GET", "/query", {"query": "ASK {}"}, [HOST, (b"host", b"evil.example")],
                  b"", 400),
}


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    store = Store()
    store.extend(sample_quads())
    return Dataset(store)


def head(method: str, path: str, params: dict[str, str], headers: list) -> Head:
    if not any(name == b"host" for name, _ in headers):
        headers = [HOST, *headers]
    return Head(method, path, path.encode(), urlencode(params).encode(), headers, "1.1", "http",
                ("127.0.0.1", 40000), ("127.0.0.1", 7878), "")


def unlabelled(reply):
    """`reply` with its blank nodes' labels (random ones, of varying length) blanked out."""
    status, headers, body = reply
    assert (b"content-length", b"%d" % len(body)) in headers
    return (status, [h for h in headers if h[0] != b"content-length"],
            re.sub(rb"_:[0-9a-f]+", b"_:", body))


def through_the_app(dataset: Dataset, config: ServiceConfig, request: Head, body: bytes):
    app = HostGuard(create_app(dataset, config), allowed=config.allowed_hosts)
    gathered = Gathered(body)
    asyncio.run(app(request.scope(), gathered.receive, gathered.send))
    return gathered.reply()


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The query strings whose operation the service worked out, in order."""
    calls: list[bytes] = []
    operation = Service.operation

    def counted(self, scope, body):
        calls.append(scope["query_string"])
        return operation(self, scope, body)

    monkeypatch.setattr(Service, "operation", counted)
    return calls


def test_a_form_holding_an_update_is_refused_for_its_token_before_it_is_decoded(
        dataset: Dataset, asked: list[bytes]) -> None:
    """The serving process answers it (kgctl.service.server.Reads): decoding a megabyte of
    form took it up to 0.9 s, which anyone could make it spend."""
    request = head("POST", "/sparql", {}, [(b"content-type", b"application/x-www-form-urlencoded")])
    form = b"upd%61te=CLEAR+ALL" + b"&a" * 400_000
    config = ServiceConfig(update_token="t")
    assert through_the_app(dataset, config, request, form)[0] == 401 and asked == []
    assert through_the_app(dataset, config, request._replace(headers=[
        *request.headers, (b"authorization", b"Bearer x")]), form)[0] == 403 and asked == []


@pytest.mark.parametrize("case", CASES)
def test_the_plain_path_answers_as_the_app(dataset: Dataset, case: str,
                                           asked: list[bytes]) -> None:
    method, path, params, headers, body, status = CASES[case]
    config = ServiceConfig()
    request = head(method, path, params, headers)
    assert path in QUERY_PATHS
    read = query_reader(dataset, config)
    plain = read(request, body)
    assert plain[0] == status, plain
    assert unlabelled(plain) == unlabelled(through_the_app(dataset, config, request, body))
    if status == 405:
        assert (b"allow", b"GET, HEAD, POST") in plain[1]
    # asked again, from another client that sends one more header: what it asks is
    # remembered (not worked out again), and the answer is the same
    again = request._replace(client=("127.0.0.1", 40001),
                             headers=[*request.headers, (b"user-agent", b"x")])
    worked_out = len(asked)
    assert unlabelled(read(again, body)) == unlabelled(plain)
    assert len(asked) == worked_out


def test_a_select_is_answered_with_its_rows(dataset: Dataset) -> None:
    _, headers, body = query_reader(dataset, ServiceConfig())(
        head("GET", "/query", {"query": SELECT, "format": "csv"}, []), b"")
    assert (b"content-type", b"text/csv; charset=utf-8") in headers
    assert body.count(b"\r\n") == 4  # a header line and three rows


def test_with_cors_the_app_answers_every_request() -> None:
    assert query_reader(Dataset(Store()), ServiceConfig(cors_origins=("https://a.example",))
                        ) is None


def test_what_a_request_asks_is_remembered_not_its_answer(asked: list[bytes]) -> None:
    store = Store()
    read = query_reader(Dataset(store), ServiceConfig())
    count = head("GET", "/query", {"query": "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }",
                                   "format": "csv"}, [])
    assert read(count, b"")[2].split() == [b"n", b"0"]
    store.extend(sample_quads())
    assert read(count, b"")[2].split() == [b"n", b"%d" % len(store)]
    assert asked == [count.query_string]


def test_a_large_request_is_not_remembered(dataset: Dataset, asked: list[bytes]) -> None:
    read = query_reader(dataset, ServiceConfig())
    padded = head("GET", "/query", {"query": "ASK {}" + " " * PREPARED_BYTES}, [JSON])
    small = head("GET", "/query", {"query": "ASK {}"}, [JSON])
    for request in (padded, padded, small, small):
        assert read(request, b"")[0] == 200
    assert asked == [padded.query_string, padded.query_string, small.query_string]
