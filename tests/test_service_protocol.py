"""SPARQL 1.1 Protocol conformance of `kgctl serve`: answers equal the embedded store's."""

from __future__ import annotations

import json
import random
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest
from pyoxigraph import (
    NamedNode,
    QueryResultsFormat,
    RdfFormat,
    Store,
    parse,
    parse_query_results,
)
from service_helpers import PAPER, PAPER_GRAPH, live_server, sample_store
from SPARQLWrapper import JSON, TURTLE, SPARQLWrapper

from kgctl.service.config import ServiceConfig
from kgctl.service.protocol import FORM, form_fields, needs_writer

PREFIX = "PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>\n" \
         "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
PRODUCTS = PREFIX + """SELECT ?g ?synthesis ?product ?order WHERE { GRAPH ?g {
  ?synthesis ontosyn:hasChemicalOutput/rdfs:label ?product ; ontosyn:hasSynthesisStep ?s .
  ?s ontosyn:hasOrder ?order } }"""
ASK_HEATCHILL = PREFIX + "ASK { GRAPH ?g { ?s a ontosyn:HeatChill } }"
CONSTRUCT = PREFIX + f"""CONSTRUCT {{ ?syn ?p ?o }} WHERE {{ GRAPH <{PAPER_GRAPH}> {{
  ?syn a ontosyn:ChemicalSynthesis ; ?p ?o }} }}"""
SELECT_DEFAULT = PREFIX + "SELECT ?s WHERE { ?s a ontosyn:ChemicalSynthesis }"


@pytest.fixture(scope="module")
def store() -> Store:
    return sample_store()


@pytest.fixture(scope="module")
def url(store: Store):
    with live_server(store, ServiceConfig(max_rows=5_000, max_bytes=300_000)) as base:
        yield base


def rows_of(results) -> set[tuple]:
    variables = [v.value for v in results.variables]
    return {tuple(str(s[v]) if s[v] is not None else None for v in variables) for s in results}


def wrapper_rows(doc: dict) -> set[tuple]:
    names = doc["head"]["vars"]
    return {tuple(b[n]["value"] if n in b else None for n in names)
            for b in doc["results"]["bindings"]}


def test_sparqlwrapper_select_ask_construct_equal_embedded(url: str, store: Store) -> None:
    client = SPARQLWrapper(f"{url}/query")
    client.setReturnFormat(JSON)
    client.setQuery(PRODUCTS)
    got = wrapper_rows(client.query().convert())
    variables = ["g", "synthesis", "product", "order"]
    expected = {tuple(s[v].value for v in variables) for s in store.query(PRODUCTS)}
    assert len(expected) > 500 and got == expected
    client.setQuery(ASK_HEATCHILL)
    assert client.query().convert()["boolean"] is True
    client.setQuery(CONSTRUCT)
    client.setReturnFormat(TURTLE)
    graph = {q.triple for q in parse(client.query().convert(), format=RdfFormat.TURTLE)}
    assert graph == set(store.query(CONSTRUCT)) and len(graph) > 10


@pytest.mark.parametrize("media, fmt", [
    ("application/sparql-results+json", QueryResultsFormat.JSON),
    ("application/sparql-results+xml", QueryResultsFormat.XML),
    ("text/csv", None),
    ("text/tab-separated-values", QueryResultsFormat.TSV),
])
def test_select_formats_by_negotiation(url: str, store: Store, media: str, fmt) -> None:
    response = httpx.get(f"{url}/query", params={"query": PRODUCTS}, headers={"Accept": media})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media)
    if fmt is None:  # CSV loses term kinds: compare plain values
        lines = response.text.split("\r\n")
        assert lines[0] == "g,synthesis,product,order"
        assert len([x for x in lines[1:] if x]) == len(list(store.query(PRODUCTS)))
        return
    assert rows_of(parse_query_results(response.content, format=fmt)) == rows_of(
        store.query(PRODUCTS))


def test_ask_and_construct_formats(url: str, store: Store) -> None:
    for media in ("application/sparql-results+json", "application/sparql-results+xml"):
        response = httpx.get(f"{url}/query", params={"query": ASK_HEATCHILL},
                             headers={"Accept": media})
        fmt = QueryResultsFormat.from_media_type(media)
        assert bool(parse_query_results(response.content, format=fmt)) is True
    expected = set(store.query(CONSTRUCT))
    for media, fmt in [("text/turtle", RdfFormat.TURTLE),
                       ("application/n-triples", RdfFormat.N_TRIPLES),
                       ("application/ld+json", RdfFormat.JSON_LD)]:
        response = httpx.get(f"{url}/query", params={"query": CONSTRUCT},
                             headers={"Accept": media})
        assert response.headers["content-type"].startswith(media)
        assert {q.triple for q in parse(response.content, format=fmt)} == expected


def test_post_form_and_direct_and_format_param(url: str) -> None:
    form = httpx.post(f"{url}/sparql", data={"query": ASK_HEATCHILL})
    direct = httpx.post(f"{url}/query", content=ASK_HEATCHILL.encode(),
                        headers={"Content-Type": "application/sparql-query"})
    assert json.loads(form.text)["boolean"] is True and json.loads(direct.text)["boolean"]
    csv = httpx.get(f"{url}/query", params={"query": PRODUCTS, "format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")


def test_dataset_selection(url: str, store: Store) -> None:
    def count(**params) -> int:
        response = httpx.get(f"{url}/query", params={"query": SELECT_DEFAULT, **params})
        assert response.status_code == 200, response.text
        return len(response.json()["results"]["bindings"])

    total = len(list(store.query(PREFIX + "SELECT ?s { GRAPH ?g { ?s a "
                                          "ontosyn:ChemicalSynthesis } }")))
    one = len(list(store.query(SELECT_DEFAULT, default_graph=NamedNode(PAPER_GRAPH))))
    assert count() == 0  # the store's default graph is empty
    assert count(**{"union-default-graph": "true"}) == total > one >= 1
    assert count(**{"union-default-graph": "false"}) == 0
    assert count(**{"default-graph-uri": PAPER_GRAPH}) == one
    maybe = httpx.get(f"{url}/query", params={"query": SELECT_DEFAULT,
                                              "union-default-graph": "maybe"})
    assert maybe.status_code == 400 and "unknown union-default-graph 'maybe': choose true" \
        in maybe.text
    named = httpx.get(f"{url}/query", params={
        "query": "SELECT DISTINCT ?g { GRAPH ?g { ?s ?p ?o } }", "named-graph-uri": PAPER_GRAPH})
    assert [b["g"]["value"] for b in named.json()["results"]["bindings"]] == [PAPER_GRAPH]


def test_graph_store_get_and_papers(url: str, store: Store) -> None:
    response = httpx.get(f"{url}/store", params={"graph": PAPER_GRAPH},
                         headers={"Accept": "text/turtle"})
    expected = {q.triple for q in store.quads_for_pattern(None, None, None,
                                                           NamedNode(PAPER_GRAPH))}
    assert {q.triple for q in parse(response.content, format=RdfFormat.TURTLE)} == expected
    missing = httpx.get(f"{url}/store", params={"graph": "https://w3id.org/kgctl/paper/none"})
    assert missing.status_code == 404 and "no graph" in missing.text
    papers = httpx.get(f"{url}/papers").json()
    assert len(papers) == 30
    entry = next(p for p in papers if p["paper"] == PAPER)
    assert entry["graph"] == PAPER_GRAPH and entry["triples"] == len(expected)


@pytest.mark.parametrize("request_kwargs, status, message", [
    ({"params": {"query": "SELEC ?x"}}, 400, "invalid SPARQL query"),
    ({"params": {"query": "ASK { FILTER(<urn:x:f>(1)) }"}}, 400, "function <urn:x:f>"),
    ({"params": {"format": "json"}}, 400, "missing 'query'"),
    ({"params": {"query": "ASK {}"}, "headers": {"Accept": "image/png"}}, 406, "cannot produce"),
    ({"params": {"query": "ASK {}", "format": "pdf"}}, 400, "unknown format"),
    ({"params": {"query": "ASK {}", "default-graph-uri": "not an iri"}}, 400, "graph IRI"),
    ({"params": {"query": "ASK {}"}, "method": "POST",
      "headers": {"Content-Type": "text/plain"}}, 415, "Content-Type"),
    ({"params": {"query": "SELECT (1 AS ?one) { GRAPH ?g { ?s ?p ?o } }", "format": "csv"}}, 422,
     "more than 5000 rows"),
    ({"params": {"query": "SELECT * { GRAPH ?g { ?s ?p ?o } } LIMIT 4000"}}, 422,
     "larger than 300000 bytes"),
])
def test_protocol_errors(url: str, request_kwargs: dict, status: int, message: str) -> None:
    kwargs = dict(request_kwargs)
    method = kwargs.pop("method", "GET")
    response = httpx.request(method, f"{url}/query", **kwargs)
    assert response.status_code == status
    assert response.text.startswith("error: ") and message in response.text


def test_bare_get_answers_the_service_description(url: str) -> None:
    response = httpx.get(f"{url}/sparql", headers={"Accept": "text/turtle"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/turtle")
    graph = Store()
    graph.load(response.content, format=RdfFormat.TURTLE)
    endpoints = {s["e"].value for s in graph.query(
        "PREFIX sd: <http://www.w3.org/ns/sparql-service-description#> "
        "SELECT ?e { ?s a sd:Service ; sd:endpoint ?e ; sd:supportedLanguage sd:SPARQL11Query }")}
    assert endpoints == {f"{url}/sparql"}


def test_cors_is_opt_in(store: Store) -> None:
    headers = {"Origin": "https://yasgui.example"}
    with live_server(sample_store()) as base:
        closed = httpx.get(f"{base}/query", params={"query": "ASK {}"}, headers=headers)
    cors = ServiceConfig(cors_origins=("https://yasgui.example",))
    with live_server(sample_store(), cors) as base:
        opened = httpx.get(f"{base}/query", params={"query": "ASK {}"}, headers=headers)
    assert "access-control-allow-origin" not in closed.headers
    assert opened.headers["access-control-allow-origin"] == "https://yasgui.example"


def test_form_fields_read_what_urllib_reads() -> None:
    """Texts of the characters that matter (escapes good and bad, backslashes, separators,
    bytes that are not UTF-8, a non-ASCII one): form_fields agrees with parse_qsl."""
    alphabet = "ab%=&+;2FfGe9\\ é"
    pick = random.Random(29)
    for _ in range(20_000):
        text = "".join(pick.choice(alphabet) for _ in range(pick.randint(0, 14)))
        assert form_fields(text) == parse_qsl(text, keep_blank_values=True), text
    read_out = urlencode([("query", "SELECT * { ?s ?p \"x\\\\y €\" FILTER(?a && ?b) }")])
    assert form_fields(read_out) == parse_qsl(read_out, keep_blank_values=True)


def test_a_form_needs_the_writer_exactly_when_a_field_decodes_to_update() -> None:
    """The serving process finds the field without decoding the form: the same answer as
    decoding it, on texts of the characters that matter."""
    pieces = [*"update", "%75", "%70", "%64", "%61", "%74", "%65", "%7", "%", "=", "&", "+",
              "U", "x", "\n"]
    pick = random.Random(31)
    for _ in range(20_000):
        text = "".join(pick.choice(pieces) for _ in range(pick.randint(0, 12)))
        decoded = any(name == "update" for name, _ in form_fields(text))
        assert needs_writer("POST", "/sparql", FORM, text.encode()) == decoded, text
