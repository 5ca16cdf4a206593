"""The HTTP side of the remote backend: SPARQL 1.1 Protocol requests with credentials from
`settings`, lost answers retried, results parsed into pyoxigraph objects, row caps detected.

Every request kgctl itself sends is idempotent (reads; updates that insert or delete fixed
data or copy staged graphs), so a lost answer (dropped connection, timeout) is retried, each
retry after a wait or a lost answer announced by one `warning:` line on stderr (a refused
connection is retried at once, quietly). Connecting may take `CONNECT_TIMEOUT_S`, an
answer `settings.timeout` (30 s unless configured); an answer that does not come is waited for
twice at most, so a server that accepts connections and never answers costs a minute, not
several. Updates a caller writes by hand are not retried. Server quirks handled here, each
standard on the wire: solutions are asked as XML first (Virtuoso writes large JSON results 4x
slower), blank nodes labelled ``nodeID://…`` (Virtuoso) are renamed to valid labels, an ASK
answered as solutions (Virtuoso) is read as its boolean, and a result cut at the server's row
cap (``X-SPARQL-MaxRows``) raises `RowCapError`.

>>> fix_node_ids(b'{"s": {"type": "bnode", "value": "nodeID://b1"}}')
b'{"s": {"type": "bnode", "value": "vb1"}}'
>>> fix_node_ids(b'<binding name="s"><bnode>nodeID://b2</bnode></binding>')
b'<binding name="s"><bnode>vb2</bnode></binding>'
>>> fix_node_ids(b'<nodeID://b7> <http://p> "x" .')
b'_:vb7 <http://p> "x" .'
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Sequence

import httpx
from pyoxigraph import (
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    Triple,
    parse,
    parse_query_results,
)

from kgctl.errors import StoreError
from kgctl.store.base import QueryResult
from kgctl.store.settings import EndpointSettings

HTTP_ERROR = 400
MAX_ERROR_CHARS = 300
RETRIES = 3
TIMEOUT_RETRIES = 1  # of a request whose answer did not come in time
BACKOFF_S = 0.1
CONNECT_TIMEOUT_S = 5.0
SOLUTIONS = "application/sparql-results+xml, application/sparql-results+json;q=0.9"
TRIPLES = "application/n-triples, text/plain;q=0.5"
CAP_HEADER = "x-sparql-maxrows"
VIRTUOSO_ASK = "__ASK_RETVAL"
_NODE_ID_JSON = re.compile(rb'"type": ?"(?:bnode|uri)", ?"value": ?"nodeID://(\w+)"')
_NODE_ID_XML = re.compile(rb"<(?:bnode|uri)>nodeID://(\w+)</(?:bnode|uri)>")
_NODE_ID_NT = re.compile(rb"<nodeID://(\w+)>|_:nodeID://(\w+)")


class RowCapError(StoreError):
    """The server returned only its first `cap` rows."""

    def __init__(self, url: str, cap: int) -> None:
        super().__init__(f"endpoint {url} cut the result at its row cap of {cap} rows "
                         "(X-SPARQL-MaxRows); page the query or raise the cap")
        self.cap = cap


def fix_node_ids(content: bytes) -> bytes:
    """Virtuoso's ``nodeID://x`` blank nodes as valid blank-node labels ``vx``."""
    if b"nodeID://" not in content:
        return content
    content = _NODE_ID_JSON.sub(lambda m: b'"type": "bnode", "value": "v' + m[1] + b'"', content)
    content = _NODE_ID_XML.sub(lambda m: b"<bnode>v" + m[1] + b"</bnode>", content)
    return _NODE_ID_NT.sub(lambda m: b"_:v" + (m[1] or m[2]), content)


class Endpoint:
    """One HTTP client for the query and update URLs of a store."""

    def __init__(self, query_url: str, update_url: str, *, settings: EndpointSettings,
                 timeout: float | None = None) -> None:
        self.query_url, self.update_url = query_url, update_url
        self.timeout = timeout or settings.timeout
        self._http = httpx.Client(
            timeout=httpx.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT_S, self.timeout)),
            auth=settings.httpx_auth(), headers=settings.headers())

    def close(self) -> None:
        self._http.close()

    def send(self, method: str, url: str, *, retry: bool = True, **request) -> httpx.Response:
        late = 0
        for attempt in range(RETRIES + 1):
            try:
                response = self._http.request(method, url, **request)
                break
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing was sent
                refused = isinstance(exc, httpx.ConnectError)
                error = str(exc) or f"no connection within {CONNECT_TIMEOUT_S:g} s"
            except httpx.HTTPError as exc:  # sent, answer lost: applied or not
                refused = False
                if not retry:
                    raise StoreError(f"lost the answer of {url} ({exc}): the update may or may "
                                     "not have been applied") from None
                late += isinstance(exc, httpx.TimeoutException)
                error = f"no answer within {self.timeout:g} s" \
                    if isinstance(exc, httpx.TimeoutException) else str(exc)
            if attempt == RETRIES or late > TIMEOUT_RETRIES:
                raise StoreError(f"cannot reach SPARQL endpoint {url}: {error}") from None
            if not refused:  # a refusal is retried at once and quietly; a wait is told
                print(f"warning: SPARQL endpoint {url}: {error}; retrying ({attempt + 1} of "
                      f"{RETRIES})", file=sys.stderr, flush=True)
            time.sleep(BACKOFF_S * 2 ** attempt)
        if response.status_code >= HTTP_ERROR:
            detail = " ".join(response.text.split())[:MAX_ERROR_CHARS]
            raise StoreError(f"endpoint {url} answered {response.status_code}: {detail}")
        return response

    def query(self, sparql: str, *, triples: bool = False,
              dataset: Sequence[tuple[str, str]] = ()) -> QueryResult | list[Triple]:
        """Solutions/boolean, or the triples of a CONSTRUCT/DESCRIBE when `triples`."""
        form: dict[str, str | list[str]] = {"query": sparql}
        for key, graph in dataset:
            form.setdefault(key, []).append(graph)  # type: ignore[union-attr]
        response = self.send("POST", self.query_url, data=form,
                             headers={"Accept": TRIPLES if triples else SOLUTIONS})
        cap = response.headers.get(CAP_HEADER)
        if cap is not None and cap.strip().isdigit():
            raise RowCapError(self.query_url, int(cap))
        media = response.headers.get("content-type", "").split(";")[0].strip()
        content = fix_node_ids(response.content)
        try:
            if media in ("application/n-triples", "text/plain"):
                return [q.triple for q in parse(content, format=RdfFormat.N_TRIPLES)]
            result_format = QueryResultsFormat.from_media_type(media)
            if result_format is None:
                raise StoreError(f"endpoint {self.query_url} answered unknown type {media!r}")
            return _ask_answer(parse_query_results(content, format=result_format))
        except SyntaxError as exc:
            raise StoreError(f"endpoint {self.query_url} sent unreadable results: {exc}"
                             ) from None

    def update(self, sparql: str, *, retry: bool = True) -> None:
        self.send("POST", self.update_url, retry=retry, content=sparql.encode(),
                  headers={"Content-Type": "application/sparql-update"})


def _ask_answer(result: QueryResult) -> QueryResult:
    """Virtuoso answers ASK in SPARQL XML as solutions of one variable `__ASK_RETVAL` (a row
    holding 1 for true, none for false): read as the boolean it stands for."""
    if not isinstance(result, QuerySolutions) or \
            [v.value for v in result.variables] != [VIRTUOSO_ASK]:
        return result
    truth = any(row[0] is not None and row[0].value not in ("0", "false") for row in result)
    return parse_query_results(b'{"head": {}, "boolean": %s}' % (b"true" if truth else b"false"),
                               format=QueryResultsFormat.JSON)
