"""Updates need the bearer token, injection cannot write, runaway queries time out while the
server stays responsive, and serving never blocks a writer."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from pyoxigraph import Store
from service_helpers import PAPER_GRAPH, live_server, sample_quads, sample_store

from kgctl.service.config import ServiceConfig

TOKEN = "correct-horse-battery"
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
INSERT = "INSERT DATA { GRAPH <urn:x:g> { <urn:x:s> <urn:x:p> \"pwned\" } }"
# blocks before its first row for about a second (pyoxigraph cannot interrupt it)
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d a ?f } }"
# evaluated lazily row by row, but finds no row: only the time limit can end it
STREAMING_RUNAWAY = ('SELECT * WHERE { GRAPH ?g { ?a ?b ?c . ?d ?e ?f . ?h ?i ?j } '
                     'FILTER(?j = "no such value") }')
# an easy request answers within this while a runaway runs: a generous bound that holds on a
# busy machine (the 1 s figure of the issue is measured by scripts/bench_service.py)
RESPONSIVE_S = 5.0
TIMEOUT_S = 0.4  # the runaways' server
# the other tests' server: a write, and a read waiting for the view that holds it, must fit
# in its time limit also on a busy machine
WRITES_TIMEOUT_S = 2.0


def size(store: Store) -> int:
    return len(store)


@pytest.fixture(scope="module")
def store() -> Store:
    return sample_store()


@pytest.fixture(scope="module")
def url(store: Store):
    with live_server(store, ServiceConfig(update_token=TOKEN, timeout_s=WRITES_TIMEOUT_S)
                     ) as base:
        yield base


@pytest.fixture(scope="module")
def short_url():
    with live_server(sample_store(), ServiceConfig(timeout_s=TIMEOUT_S)) as base:
        yield base


@pytest.mark.parametrize("headers, status", [
    ({}, 401),
    ({"Authorization": "Bearer wrong-token"}, 403),
    ({"Authorization": f"Basic {TOKEN}"}, 401),
    ({"Authorization": "Bearer"}, 401),
])
def test_update_without_or_with_wrong_token_writes_nothing(url: str, store: Store,
                                                           headers: dict, status: int) -> None:
    before = size(store)
    for path in ("/update", "/sparql"):
        response = httpx.post(f"{url}{path}", data={"update": INSERT}, headers=headers)
        assert response.status_code == status, response.text
        assert response.text.startswith("error: ")
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert size(store) == before


def test_update_with_token_writes_atomically(url: str, store: Store) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    bad = httpx.post(f"{url}/update", data={"update": INSERT + " ; INSERT DATA { oops"},
                     headers=auth)
    assert bad.status_code == 400 and size(store) == len(sample_quads())
    done = httpx.post(f"{url}/update", content=INSERT.encode(),
                      headers={**auth, "Content-Type": "application/sparql-update"})
    assert done.status_code == 204
    ask = httpx.get(f"{url}/query", params={"query": 'ASK { GRAPH <urn:x:g> { ?s ?p "pwned" } }'})
    assert ask.json()["boolean"] is True
    httpx.post(f"{url}/update", data={"update": "DROP GRAPH <urn:x:g>"}, headers=auth)
    assert size(store) == len(sample_quads())


@pytest.mark.parametrize("update", [
    "CLEAR GRAPH <urn:x:nope>", f"{INSERT} ; DROP GRAPH <urn:x:nope>",
    f"{INSERT} ; MOVE <urn:x:nope> TO <urn:x:g>", f"CREATE GRAPH <{PAPER_GRAPH}>"])
def test_an_update_that_cannot_be_done_is_a_400_and_writes_nothing(url: str, store: Store,
                                                                    update: str) -> None:
    before = size(store)
    answer = httpx.post(f"{url}/update", data={"update": update},
                        headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 400 and answer.text.startswith("error: ") and \
        ("does not exist" in answer.text or "already exists" in answer.text), answer.text
    assert size(store) == before


def test_updates_disabled_without_configured_token(store: Store) -> None:
    with live_server(sample_store()) as base:
        response = httpx.post(f"{base}/update", data={"update": INSERT},
                              headers={"Authorization": "Bearer anything"})
    assert response.status_code == 403 and "disabled" in response.text


@pytest.mark.parametrize("params", [
    {"query": INSERT},
    {"query": f"ASK {{}} ; {INSERT}"},
    {"query": "ASK {}", "default-graph-uri": "urn:x:g> } INSERT DATA { <urn:a> <urn:b> <urn:c>"},
    {"query": 'SELECT * { ?s ?p "x\\" } ; DROP ALL ; #" }'},
    {"update": INSERT},
])
def test_injection_in_query_parameters_cannot_write(url: str, store: Store, params) -> None:
    before = size(store)
    for method in ("GET", "POST"):
        kwargs = {"params": params} if method == "GET" else {"data": params}
        response = httpx.request(method, f"{url}/query", **kwargs)
        # refused, or (the quoted case) run as the harmless query it really is
        assert response.status_code in (200, 400), response.text
    assert size(store) == before
    papers = httpx.get(f"{url}/papers").json()
    assert len(papers) == 30 and "urn:x:g" not in {p["graph"] for p in papers}


@pytest.mark.parametrize("query", [RUNAWAY, STREAMING_RUNAWAY])
def test_runaway_query_times_out_and_server_stays_responsive(short_url: str, query: str
                                                             ) -> None:
    url = short_url
    result: dict = {}

    def runaway() -> None:
        started = time.monotonic()
        result["response"] = httpx.get(f"{url}/query", params={"query": query}, timeout=30)
        result["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=runaway)
    thread.start()
    time.sleep(0.1)
    started = time.monotonic()
    quick = httpx.get(f"{url}/query", params={"query": f"ASK {{ GRAPH <{PAPER_GRAPH}> {{}} }}"})
    assert quick.status_code == 200 and time.monotonic() - started < RESPONSIVE_S
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    thread.join(30)
    assert result["response"].status_code == 503
    assert f"timed out after {TIMEOUT_S:g} s" in result["response"].text
    assert result["seconds"] < TIMEOUT_S + RESPONSIVE_S


def test_serving_does_not_block_a_writer(url: str, store: Store) -> None:
    """While a long query runs, an update through the endpoint lands at once and is visible."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    reader = threading.Thread(target=httpx.get, args=(f"{url}/query",),
                              kwargs={"params": {"query": STREAMING_RUNAWAY}, "timeout": 30})
    reader.start()
    time.sleep(0.1)
    started = time.monotonic()
    done = httpx.post(f"{url}/update", data={"update": INSERT}, headers=auth)
    elapsed = time.monotonic() - started
    assert done.status_code == 204 and elapsed < RESPONSIVE_S
    assert reader.is_alive()  # the long query was still being served meanwhile
    count = httpx.get(f"{url}/query", params={"query": COUNT}).json()
    assert int(count["results"]["bindings"][0]["n"]["value"]) == len(sample_quads()) + 1
    reader.join(30)
    httpx.post(f"{url}/update", data={"update": "DROP GRAPH <urn:x:g>"}, headers=auth)


def test_graph_store_writes_need_the_token_and_bad_data_writes_nothing(url: str,
                                                                       store: Store) -> None:
    graph = "urn:x:gsp"
    turtle = {"Content-Type": "text/turtle"}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    refused = httpx.put(f"{url}/store", params={"graph": graph}, content=b"<urn:a> <urn:b> 1 .",
                        headers=turtle)
    assert refused.status_code == 401
    bad = httpx.put(f"{url}/store", params={"graph": graph}, content=b"<urn:a> <urn:b",
                    headers={**turtle, **auth})
    assert bad.status_code == 400 and size(store) == len(sample_quads())
    for media in ("image/png", "multipart/form-data; boundary=x"):  # the writer goes on
        unsupported = httpx.request("PUT" if media == "image/png" else "POST", f"{url}/store",
                                    params={"graph": graph}, content=b"--x\r\nContent-Type: "
                                    b"image/png\r\n\r\nabc\r\n--x--\r\n",
                                    headers={"Content-Type": media, **auth})
        assert unsupported.status_code == 415, unsupported.text
    created = httpx.put(f"{url}/store", params={"graph": graph}, content=b"<urn:a> <urn:b> 1 .",
                        headers={**turtle, **auth})
    assert created.status_code == 201
    got = httpx.get(f"{url}/store", params={"graph": graph, "format": "nt"})
    assert got.text == '<urn:a> <urn:b> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'
    head = httpx.head(f"{url}/store", params={"graph": graph, "format": "nt"})
    assert int(head.headers["content-length"]) == len(got.content)
    assert httpx.delete(f"{url}/store", params={"graph": graph}).status_code == 401
    assert httpx.delete(f"{url}/store", params={"graph": graph}, headers=auth).status_code == 204
    assert httpx.get(f"{url}/store", params={"graph": graph}).status_code == 404
    assert size(store) == len(sample_quads())


def test_update_takes_the_protocol_dataset_and_refuses_a_conflicting_one(url: str) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    copy = "INSERT { GRAPH <urn:x:copy> { ?s ?p ?o } } WHERE { ?s ?p ?o }"
    done = httpx.post(f"{url}/update", data={"update": copy, "using-graph-uri": PAPER_GRAPH},
                      headers=auth)
    assert done.status_code == 204
    count = httpx.get(f"{url}/query", params={
        "query": "SELECT (COUNT(*) AS ?n) { GRAPH <urn:x:copy> { ?s ?p ?o } }"}).json()
    papers = {p["graph"]: p["triples"] for p in httpx.get(f"{url}/papers").json()}
    assert int(count["results"]["bindings"][0]["n"]["value"]) == papers[PAPER_GRAPH]
    conflict = httpx.post(f"{url}/update", headers=auth, data={
        "update": f"WITH <{PAPER_GRAPH}> DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}",
        "using-named-graph-uri": PAPER_GRAPH})
    assert conflict.status_code == 400 and "USING/WITH" in conflict.text
    httpx.post(f"{url}/update", data={"update": "DROP GRAPH <urn:x:copy>"}, headers=auth)
