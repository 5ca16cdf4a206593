"""Run the W3C SPARQL 1.1 Protocol and Graph Store Protocol manifest cases over HTTP.

Each case is a list of HTTP requests with expected statuses (and booleans, result kinds or
graphs); `run_case` sends them to a server through a `Target` that maps the manifests'
``/sparql/`` and ``/gsp`` paths onto that server's endpoints, after loading the case's data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from pyoxigraph import NamedNode, QueryResultsFormat, RdfFormat, Store, parse_query_results
from rdflib import Graph
from rdflib.compare import isomorphic

W3C = Path(__file__).parent / "w3c"
MANIFESTS = {"protocol": [W3C / "protocol" / "manifest.ttl"],
             "gsp": [W3C / "graph-store-protocol" / "manifest-direct.ttl",
                     W3C / "graph-store-protocol" / "manifest-indirect.ttl"]}
HOST = "www.example"
STATUS = {"OK": (200,), "Created": (201,), "NoContent": (204,), "NotFound": (404,),
          **{f"StatusCode{n}xx": tuple(range(n * 100, n * 100 + 100)) for n in range(1, 6)}}
CASES = """
PREFIX mf: <http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?case ?name WHERE { ?m mf:entries/rdf:rest*/rdf:first ?case . ?case mf:name ?name }
"""
REQUESTS = """
PREFIX ht: <http://www.w3.org/2011/http#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?request WHERE { ?case <http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#action>
  /ht:requests/rdf:rest* ?cell . ?cell rdf:first ?request . ?list rdf:rest* ?cell .
  ?case <http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#action>/ht:requests ?list }
"""


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    statuses: tuple[int, ...]
    boolean: bool | None = None
    kind: str | None = None  # boolean, tabular or RDF
    graph: str | None = None  # expected Turtle
    location: str | None = None  # a $NAME$ to take from the Location header


@dataclass
class Case:
    iri: str
    name: str
    requests: list[Request]
    data: dict[str, bytes] = field(default_factory=dict)  # graph IRI -> N-Triples


def _one(store: Store, subject, predicate: str):
    return next(iter(store.quads_for_pattern(subject, NamedNode(predicate), None)), None)


def _value(store: Store, subject, predicate: str) -> str | None:
    quad = _one(store, subject, predicate)
    return None if quad is None else quad.object.value


def _items(store: Store, head) -> list:
    first = "http://www.w3.org/1999/02/22-rdf-syntax-ns#first"
    rest = "http://www.w3.org/1999/02/22-rdf-syntax-ns#rest"
    out = []
    while head is not None and getattr(head, "value", "") != rest[:-4] + "nil":
        item = _one(store, head, first)
        if item is None:
            break
        out.append(item.object)
        head = _one(store, head, rest).object
    return out


HT = "http://www.w3.org/2011/http#"
MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
CNT = "http://www.w3.org/2011/content#"


def _request(store: Store, node) -> Request:
    headers = {_value(store, h, HT + "fieldName"): _value(store, h, HT + "fieldValue")
               for h in _items(store, _one(store, node, HT + "headers").object)} \
        if _one(store, node, HT + "headers") else {}
    body_node = _one(store, node, HT + "body")
    body = None
    if body_node is not None:
        encoding = _value(store, body_node.object, CNT + "characterEncoding") or "UTF-8"
        body = (_value(store, body_node.object, CNT + "chars") or "").encode(encoding)
    response = _one(store, node, HT + "resp").object
    statuses: tuple[int, ...] = ()
    for quad in store.quads_for_pattern(response, NamedNode(MF + "expectedStatus"), None):
        statuses += STATUS[quad.object.value.rsplit("#", 1)[1]]
    boolean = _value(store, response, MF + "expectedBoolean")
    graph = None
    if _one(store, response, HT + "body"):
        graph = _value(store, _one(store, response, HT + "body").object, CNT + "chars")
    return Request(method=_value(store, node, HT + "methodName") or "GET",
                   path=_value(store, node, HT + "absolutePath") or "/",
                   headers={k.lower(): v for k, v in headers.items() if k and v},
                   body=body, statuses=statuses,
                   boolean=None if boolean is None else boolean == "true",
                   kind=_value(store, response, MF + "expectedFormat"), graph=graph,
                   location=_value(store, response, MF + "expectedLocation"))


def load_cases(suite: str) -> list[Case]:
    cases: list[Case] = []
    for manifest in MANIFESTS[suite]:
        store = Store()
        store.load(path=str(manifest), format=RdfFormat.TURTLE, base_iri=manifest.as_uri())
        for row in store.query(CASES):
            case = row["case"]
            action = _one(store, case, MF + "action").object
            requests = _items(store, _one(store, action, HT + "requests").object)
            data = {}
            ut = "http://www.w3.org/2009/sparql/tests/test-update#"
            for quad in store.quads_for_pattern(case, NamedNode(ut + "graphData"), None):
                file = _value(store, quad.object, ut + "graph")
                label = _value(store, quad.object, "http://www.w3.org/2000/01/rdf-schema#label")
                data[label] = Path(file.removeprefix("file://")).read_bytes()
            cases.append(Case(case.value, row["name"].value,
                              [_request(store, r) for r in requests], data))
    return cases


@dataclass
class Target:
    """A server under test: its URL, how to reach its endpoints, and how to reset it."""

    url: str
    endpoint: Callable[[Request], str]  # the path replacing /sparql/ for this request
    auth: dict[str, str]
    http: httpx.Client = field(default_factory=httpx.Client)

    def reset(self, data: dict[str, bytes]) -> None:
        update = {"Content-Type": "application/sparql-update", "Host": HOST, **self.auth}
        path = self.endpoint(Request("POST", "/sparql/", {"content-type":
                                     "application/sparql-update"}, b"", ()))
        self.http.post(self.url + path, content=b"DROP ALL", headers=update).raise_for_status()
        for graph, triples in data.items():
            self.http.put(f"{self.url}/store", params={"graph": graph}, content=triples,
                      headers={"Content-Type": "application/n-triples", "Host": HOST,
                               **self.auth}).raise_for_status()


def is_update(request: Request) -> bool:
    text = request.path + (request.body or b"").decode("latin-1")[:7]
    return ("update=" in text or "using-" in text
            or "sparql-update" in request.headers.get("content-type", ""))


def run_case(case: Case, target: Target) -> str | None:
    """None when the server passes the case, else what went wrong."""
    target.reset(case.data)
    variables: dict[str, str] = {}
    for number, request in enumerate(case.requests, start=1):
        path, body = request.path, request.body
        for name, value in variables.items():
            path = path.replace(name, value)
            body = body.replace(name.encode(), value.encode()) if body else body
        if path.startswith("/sparql/"):
            path = target.endpoint(request) + path[len("/sparql/"):]
        elif path.startswith("/gsp"):
            path = "/store" + path[len("/gsp"):]
        headers = {"Host": HOST, **request.headers, **target.auth}
        try:
            response = target.http.request(request.method, target.url + path, content=body,
                                           headers=headers)
        except httpx.HTTPError as exc:  # a broken answer: a fresh connection for what follows
            target.http.close()
            target.http = httpx.Client()
            return f"request {number} ({request.method} {path[:60]}): {exc}"
        if request.method == "HEAD":  # a server that sends a body here spoils the connection
            target.http.close()
            target.http = httpx.Client()
        problem = _check(request, response)
        if problem:
            return f"request {number} ({request.method} {path[:60]}): {problem}"
        if request.location:
            variables[request.location] = response.headers.get("location", "")
    return None


def _check(request: Request, response: httpx.Response) -> str | None:
    if response.status_code not in request.statuses:
        return f"status {response.status_code}: {response.text[:120]!r}"
    media = response.headers.get("content-type", "").split(";")[0].strip()
    results = QueryResultsFormat.from_media_type(media) if media else None
    graph = RdfFormat.from_media_type(media) if media else None
    if request.kind in ("boolean", "tabular") and results is None:
        return f"{request.kind} result expected, got {media!r}"
    if request.kind == "RDF" and graph is None:
        return f"RDF expected, got {media!r}"
    if request.boolean is not None:
        if results is None:
            return f"boolean expected, got {media!r}"
        answer = parse_query_results(response.content, format=results)
        if bool(answer) != request.boolean:
            return f"boolean {bool(answer)}, expected {request.boolean}"
    if request.graph is not None and request.method != "HEAD":
        if graph is None:
            return f"a graph expected, got {media!r}"
        got = Graph().parse(data=response.content, format=graph.media_type)
        want = Graph().parse(data=request.graph, format="turtle")
        if not isomorphic(got, want):
            return "graph differs from the expected one"
    return None


