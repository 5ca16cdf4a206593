"""Run one protocol query under the service's limits and serialise the answer.

Runs in a worker thread (pyoxigraph releases the GIL while it evaluates). Rows are read one by
one so the deadline, a cancel signal and the row limit are checked between rows; a query that
blocks before its first row (a big ORDER BY or GROUP BY) cannot be interrupted inside
pyoxigraph: the caller answers at the deadline and the thread finishes in the background.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from pydantic import BaseModel, ConfigDict
from pyoxigraph import (
    DefaultGraph,
    NamedNode,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    serialize,
)

from kgctl.service.dataset import Dataset
from kgctl.service.negotiation import GRAPH_TYPES, SOLUTION_TYPES, by_name, negotiate
from kgctl.service.results import SERIALISERS

T = TypeVar("T")
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


class Limits(BaseModel):
    model_config = ConfigDict(frozen=True)
    timeout_s: float
    max_rows: int


class QueryRequest(BaseModel):
    """A parsed protocol query: the text, the dataset it runs on and the wanted serialisation."""

    model_config = ConfigDict(frozen=True)
    query: str
    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    union: bool = False
    accept: str | None = None
    format: str | None = None  # the ``format`` parameter, wins over Accept


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)
    body: bytes
    media_type: str


def run_query(dataset: Dataset, request: QueryRequest, *, limits: Limits,
              cancel: threading.Event) -> Answer:
    """Evaluate and serialise in the calling (worker) thread."""
    try:
        return _evaluate(dataset, request, limits=limits, cancel=cancel)
    except HttpProblem as problem:
        # pyoxigraph result iterators must die in the thread that made them: drop the frames
        # that hold them here rather than in the event loop that receives the exception
        raise problem.with_traceback(None) from None


def _evaluate(dataset: Dataset, request: QueryRequest, *, limits: Limits,
              cancel: threading.Event) -> Answer:
    deadline = time.monotonic() + limits.timeout_s
    try:
        result = dataset.query(request.query,
                               default_graphs=[iri(g) for g in request.default_graphs],
                               named_graphs=[iri(g) for g in request.named_graphs],
                               union=request.union)
    except SyntaxError as exc:
        raise HttpProblem(HTTP_BAD_REQUEST, f"invalid SPARQL query: {exc}") from None
    except OSError as exc:
        raise HttpProblem(HTTP_BAD_REQUEST, f"query failed: {exc}") from None
    guard = _Guard(deadline, limits, cancel)
    if isinstance(result, QuerySolutions):
        fmt = choose(request, SOLUTION_TYPES)
        variables = [v.value for v in result.variables]
        rows = [tuple(s[v] for v in variables) for s in guard.rows(result, "rows")]
        return Answer(body=SERIALISERS[fmt](variables, rows), media_type=fmt.media_type)
    if isinstance(result, QueryBoolean):
        fmt = choose(request, SOLUTION_TYPES)
        return Answer(body=result.serialize(format=fmt), media_type=fmt.media_type)
    fmt = choose(request, GRAPH_TYPES)
    triples = list(guard.rows(result, "triples"))
    return Answer(body=serialize(triples, format=fmt), media_type=fmt.media_type)


class _Guard:
    def __init__(self, deadline: float, limits: Limits, cancel: threading.Event) -> None:
        self.deadline, self.limits, self.cancel = deadline, limits, cancel

    def rows(self, items: Iterable[T], what: str) -> Iterator[T]:
        for count, item in enumerate(_timed(items, self), start=1):
            if count > self.limits.max_rows:
                raise HttpProblem(HTTP_UNPROCESSABLE,
                                  f"result has more than {self.limits.max_rows} {what} (the "
                                  "server's limit); add LIMIT or narrow the query")
            yield item

    def check(self) -> None:
        if self.cancel.is_set() or time.monotonic() > self.deadline:
            raise query_timeout(self.limits.timeout_s)


def _timed(items: Iterable[T], guard: _Guard) -> Iterator[T]:
    iterator = iter(items)
    while True:
        guard.check()
        try:
            item = next(iterator)
        except StopIteration:
            return
        except (OSError, ValueError) as exc:  # evaluation errors surface while iterating
            raise HttpProblem(HTTP_BAD_REQUEST, f"query failed: {exc}") from None
        guard.check()
        yield item


def query_timeout(timeout_s: float) -> HttpProblem:
    return HttpProblem(HTTP_UNAVAILABLE,
                       f"query timed out after {timeout_s:g} s (the server's limit); "
                       "narrow the query or add LIMIT")


def choose(request: QueryRequest, offers: dict[str, QueryResultsFormat] | dict[str, RdfFormat]):
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


def graph_of(param: str | None, *, default: bool) -> NamedNode | DefaultGraph:
    """The graph named by Graph Store Protocol ``graph=`` / ``default`` parameters."""
    if default == (param is not None):
        raise HttpProblem(HTTP_BAD_REQUEST, "give exactly one of ?graph=<IRI> or ?default")
    return DefaultGraph() if default else iri(param or "")
