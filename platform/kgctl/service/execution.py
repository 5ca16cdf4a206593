"""Evaluate one read request under the service's row and byte limits (in a query worker; the
owning process enforces the time limit by killing the worker). Results are written into a
byte-bounded sink, so neither many rows nor a few huge ones are ever held whole."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from pyoxigraph import (
    DefaultGraph,
    NamedNode,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    parse_query_results,
    serialize,
)

from kgctl.service.asgi import Reply, refusal, reply
from kgctl.service.dataset import Dataset
from kgctl.service.negotiation import GRAPH_TYPES, SOLUTION_TYPES, by_name, negotiate
from kgctl.store.base import QueryResult
from kgctl.store.views import DEFAULT_VIEW

T = TypeVar("T")
# the fewest bytes a row takes in each format ("{}," / "<result/>" / a line break)
MIN_ROW_BYTES = {QueryResultsFormat.JSON: 3, QueryResultsFormat.XML: 9,
                 QueryResultsFormat.CSV: 2, QueryResultsFormat.TSV: 1}
HTTP_OK = 200
HTTP_BAD_REQUEST = 400
HTTP_NOT_FOUND = 404
HTTP_NOT_ACCEPTABLE = 406
HTTP_UNPROCESSABLE = 422
HTTP_UNAVAILABLE = 503


class HttpProblem(Exception):
    """A request the service refuses: an HTTP status and a message a person can act on."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self):  # raised in the writer process, told to the serving process
        return type(self), (self.status, str(self))


class ResultTooLarge(Exception):
    """The serialised result passed the byte limit."""


class Sink:
    """A binary output that keeps at most `max_bytes` (pyoxigraph's serialisers write to it).

    >>> sink = Sink(10)
    >>> sink.write(b"0123456789"), sink.overflowed
    (10, False)
    >>> sink.write(b"!")
    Traceback (most recent call last):
    ...
    kgctl.service.execution.ResultTooLarge: result is over 10 bytes
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.size, self.overflowed = max_bytes, 0, False
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.max_bytes:
            self.overflowed = True
            raise ResultTooLarge(f"result is over {self.max_bytes} bytes")
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered (file-object protocol)."""

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


@dataclass(frozen=True)
class Limits:
    max_rows: int
    max_bytes: int


@dataclass(frozen=True)
class QueryRequest:
    """A parsed protocol query: the text, the dataset it runs on and the wanted serialisation."""

    query: str
    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    union: bool = False
    base_iri: str | None = None
    accept: str | None = None
    format: str | None = None  # the ``format`` parameter, wins over Accept
    view: str = DEFAULT_VIEW  # the ``view`` parameter: merged or raw graphs (store.views)


@dataclass(frozen=True)
class GraphRequest:
    """A Graph Store Protocol read: one graph (None: the default graph) in a negotiated format."""

    graph: str | None
    accept: str | None = None
    format: str | None = None


def answer(dataset: Dataset, request: QueryRequest | GraphRequest, limits: Limits) -> Reply:
    """The response to a read request; refusals become an ``error:`` answer, not an exception."""
    try:
        if isinstance(request, GraphRequest):
            return _graph(dataset, request, limits)
        return _query(dataset, request, limits)
    except HttpProblem as problem:
        return refusal(problem.status, str(problem))


def _query(dataset: Dataset, request: QueryRequest, limits: Limits) -> Reply:
    result = _evaluate(dataset, request)
    if isinstance(result, QueryBoolean):
        fmt = choose(request, SOLUTION_TYPES)
        return reply(HTTP_OK, fmt.media_type, result.serialize(format=fmt))
    if isinstance(result, QuerySolutions):
        fmt = choose(request, SOLUTION_TYPES)
        sink = Sink(limits.max_bytes)
        _fill(sink, limits, lambda: result.serialize(sink, fmt))
        body = sink.getvalue()
        # a result this short cannot hold more rows than the limit; a longer one has its rows
        # counted (not evaluated again: a heavy query would cost twice)
        if len(body) > MIN_ROW_BYTES[fmt] * limits.max_rows \
                and _rows(body, fmt) > limits.max_rows:
            raise _too_many(limits, "rows")
        return reply(HTTP_OK, fmt.media_type, body)
    fmt = choose(request, GRAPH_TYPES)
    sink = Sink(limits.max_bytes)
    _fill(sink, limits, lambda: serialize(_bounded(result, limits, "triples"), sink, fmt))
    return reply(HTTP_OK, fmt.media_type, sink.getvalue())


def _evaluate(dataset: Dataset, request: QueryRequest) -> QueryResult:
    try:
        return dataset.query(request.query, default_graphs=[iri(g) for g in request.default_graphs],
                             named_graphs=[iri(g) for g in request.named_graphs],
                             union=request.union, base_iri=request.base_iri, view=request.view)
    except SyntaxError as exc:
        raise HttpProblem(HTTP_BAD_REQUEST, f"invalid SPARQL query: {exc}") from None
    except (OSError, ValueError, RuntimeError) as exc:  # evaluation, unknown function, base IRI
        raise HttpProblem(HTTP_BAD_REQUEST, f"query failed: {exc}") from None


def _graph(dataset: Dataset, request: GraphRequest, limits: Limits) -> Reply:
    graph = DefaultGraph() if request.graph is None else iri(request.graph)
    fmt = choose(request, GRAPH_TYPES)
    if not dataset.has_graph(graph):
        raise HttpProblem(HTTP_NOT_FOUND, f"no graph {graph} in this store")
    sink = Sink(limits.max_bytes)
    triples = (q.triple for q in dataset.graph_quads(graph))
    _fill(sink, limits, lambda: serialize(_bounded(triples, limits, "triples"), sink, fmt))
    return reply(HTTP_OK, fmt.media_type, sink.getvalue())


def _fill(sink: Sink, limits: Limits, write) -> None:
    """Run `write` into `sink`; 422 when the result passes the byte limit."""
    try:
        write()
    except (ResultTooLarge, OSError, ValueError) as exc:
        if sink.overflowed:
            raise HttpProblem(HTTP_UNPROCESSABLE, f"result is larger than {limits.max_bytes} "
                              "bytes (the server's limit); add LIMIT or narrow the query") from None
        if isinstance(exc, ResultTooLarge):
            raise
        raise HttpProblem(HTTP_BAD_REQUEST, f"query failed: {exc}") from None


def _rows(body: bytes, fmt: QueryResultsFormat) -> int:
    """Rows of a written result: pyoxigraph parses every format but CSV, whose records end at
    line breaks outside quotes (a doubled quote inside a value opens and closes nothing), after
    a header record; no value is too long for this count.

    >>> _rows(b'a,b\\r\\n"x\\ny",1\\r\\n"q""z",2\\r\\n', QueryResultsFormat.CSV)
    2
    >>> _rows(b'a\\r\\n"' + b"x" * 200_000 + b'"\\r\\n', QueryResultsFormat.CSV)
    1
    """
    if fmt == QueryResultsFormat.CSV:
        return sum(part.count(b"\n") for part in body.split(b'"')[::2]) - 1
    return sum(1 for _ in parse_query_results(body, fmt))


def _bounded(items: Iterable[T], limits: Limits, what: str) -> Iterator[T]:
    for count, item in enumerate(items, start=1):
        if count > limits.max_rows:
            raise _too_many(limits, what)
        yield item


def _too_many(limits: Limits, what: str) -> HttpProblem:
    return HttpProblem(HTTP_UNPROCESSABLE, f"result has more than {limits.max_rows} {what} (the "
                       "server's limit); add LIMIT or narrow the query")


def query_timeout(timeout_s: float) -> HttpProblem:
    return HttpProblem(HTTP_UNAVAILABLE, f"query timed out after {timeout_s:g} s (the server's "
                       "limit); narrow the query or add LIMIT")


def choose(request: QueryRequest | GraphRequest,
           offers: dict[str, QueryResultsFormat] | dict[str, RdfFormat]):
    """The serialisation for this answer, or 406 naming what the server can produce."""
    if request.format:
        fmt = by_name(request.format, offers)
        if fmt is None:
            raise HttpProblem(HTTP_BAD_REQUEST, f"unknown format {request.format!r} for this "
                              f"query; use one of: {', '.join(sorted(set(offers)))}")
        return fmt
    fmt = negotiate(request.accept, offers)
    if fmt is None:
        raise HttpProblem(HTTP_NOT_ACCEPTABLE, f"cannot produce {request.accept!r} for this "
                          f"query; acceptable: {', '.join(offers)}")
    return fmt


def iri(text: str) -> NamedNode:
    """A graph IRI from a request parameter (400 when it is not an IRI)."""
    try:
        return NamedNode(text)
    except ValueError:
        raise HttpProblem(HTTP_BAD_REQUEST, f"not a valid graph IRI: {text!r}") from None
