"""The HTTP service (the routes: docs/service.md). Each query worker runs this app over a
read-only view and answers the reads; the serving process runs it with the writer process's
dataset and answers the writes."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Callable
from concurrent.futures import Future
from functools import lru_cache, partial
from pathlib import Path
from typing import TypeVar

from pyoxigraph import RdfFormat
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kgctl.errors import DataRejected, StoreError
from kgctl.evaluation.evidence_page import evidence_route
from kgctl.service.asgi import (
    BodyTooLarge,
    Front,
    Handler,
    Head,
    Receive,
    Reply,
    Scope,
    Send,
    header,
    read_body,
    refusal,
    reply,
    send_reply,
)
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.description import describe
from kgctl.service.execution import (
    HTTP_BAD_REQUEST,
    HTTP_NOT_FOUND,
    HTTP_OK,
    GraphRequest,
    HttpProblem,
    QueryRequest,
    answer,
    choose,
)
from kgctl.service.federation import check_remote
from kgctl.service.graph_store import graph_store_routes
from kgctl.service.hosts import HostGuard, request_url
from kgctl.service.negotiation import GRAPH_TYPES
from kgctl.service.protocol import UpdateRequest, form_fields, needs_writer, parse_operation

T = TypeVar("T")
STATIC_DIR = Path(__file__).resolve().parent / "static"
# YASGUI is fetched at build time (scripts/fetch_yasgui.py); without it the page is a plain editor
YASGUI_PAGE, PLAIN_PAGE = STATIC_DIR / "yasgui.html", STATIC_DIR / "index.html"
YASGUI_SCRIPT = STATIC_DIR / "yasgui" / "yasgui.min.js"
HTTP_NO_CONTENT = 204
HTTP_UNAUTHORIZED = 401
HTTP_FORBIDDEN = 403
HTTP_METHOD_NOT_ALLOWED = 405
HTTP_TOO_LARGE = 413
HTTP_SERVER_ERROR = 500
MAX_BODY_BYTES = 1_000_000
QUERY_PATHS = frozenset({"/query", "/sparql"})  # those a query worker answers (`query_reader`)
QUERY_METHODS = "GET, HEAD, POST"
PREPARED, PREPARED_BYTES = 256, 8192  # a worker remembers what this many requests this small ask
PREPARED_HEADERS = frozenset({b"host", b"accept", b"content-type"})  # what a query's answer reads


class Service:
    """What the request handlers share: the dataset, the config and, in the owning process
    (whose dataset writes through the writer process), `written` to call after each write."""

    def __init__(self, dataset: Dataset, config: ServiceConfig,
                 written: Callable[[], None] | None) -> None:
        self.dataset, self.config, self._written = dataset, config, written

    def read(self, request: GraphRequest) -> Response:
        status, headers, body = answer(self.dataset, request, self.config.limits)
        response = Response(body, status_code=status)
        response.raw_headers = headers
        return response

    def authorise(self, scope: Scope) -> None:
        authorise(header(scope, b"authorization"), self.config.update_token)

    async def write(self, scope: Scope, change: Callable[[], T]) -> T:
        """Run `change` in a thread once the bearer token is checked (the writer process
        takes one write at a time); readers see it from their next request on."""
        self.authorise(scope)
        if self._written is None:
            raise HttpProblem(HTTP_SERVER_ERROR, "writes are made by the owning process only")
        try:
            return await asyncio.to_thread(change)
        except (SyntaxError, DataRejected) as exc:
            raise HttpProblem(HTTP_BAD_REQUEST, f"invalid input: {exc}") from None
        except StoreError as exc:
            raise HttpProblem(HTTP_SERVER_ERROR, str(exc)) from None
        finally:
            self._written()

    async def body(self, scope: Scope, receive: Receive, limit: int = MAX_BODY_BYTES) -> bytes:
        """The request body (received within the body timeout), 413 past `limit` or as soon
        as its Content-Length says it would be."""
        try:
            return await read_body(receive, limit, header(scope, b"content-length"))
        except BodyTooLarge as exc:
            raise HttpProblem(HTTP_TOO_LARGE, str(exc)) from None

    def base_iri(self, scope: Scope) -> str:
        """The configured base IRI, else the URL the request went to (without its query)."""
        return self.config.base_iri or request_url(scope)

    def operation(self, scope: Scope, body: bytes) -> QueryRequest | UpdateRequest | Reply:
        """What a request to /query or /sparql asks (its body is empty but for POST): a query,
        an update (which only the owning process makes) or the service description."""
        method, config = scope["method"], self.config
        params = form_fields(scope["query_string"].decode("latin-1"))
        if method in ("GET", "HEAD") and not params:
            fmt: RdfFormat = choose(GraphRequest(graph=None, accept=header(scope, b"accept")),
                                    GRAPH_TYPES)
            return reply(HTTP_OK, fmt.media_type, describe(
                request_url(scope), fmt, updates=config.update_token is not None,
                union_default=config.union_default))
        operation = parse_operation(method, header(scope, b"content-type"), params, body,
                                    accept=header(scope, b"accept"), union=config.union_default,
                                    base_iri=self.base_iri(scope))
        if isinstance(operation, UpdateRequest):
            if scope["path"] == "/query":
                raise HttpProblem(HTTP_BAD_REQUEST, "send updates to /update or /sparql")
            return operation
        check_remote(operation.query, config.allow_service, update=False)
        return operation

    def answer(self, operation: QueryRequest | Reply) -> Reply:
        return answer(self.dataset, operation, self.config.limits) \
            if isinstance(operation, QueryRequest) else operation


def create_app(dataset: Dataset, config: ServiceConfig,
               written: Callable[[], None] | None = None,
               healthy: Callable[[], bool] = lambda: True) -> Handler:
    """The ASGI application serving `dataset`: in each query worker (it answers the reads),
    and in the owning process with `written` (it answers what workers hand over: the
    requests that change the store). `/healthz` says ok while `healthy()`."""
    service = Service(dataset, config, written)

    async def query_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        body = await service.body(scope, receive) if scope["method"] == "POST" else b""
        if needs_writer(scope["method"], scope["path"], header(scope, b"content-type"), body):
            service.authorise(scope)  # before the form is decoded (a megabyte: up to 0.9 s)
        operation = service.operation(scope, body)
        if isinstance(operation, UpdateRequest):
            return await answer_update(scope, send, operation)
        await send_reply(send, service.answer(operation))

    async def update_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        service.authorise(scope)  # before a body is read
        operation = parse_operation("POST", header(scope, b"content-type"),
                                    form_fields(scope["query_string"].decode("latin-1")),
                                    await service.body(scope, receive))
        if not isinstance(operation, UpdateRequest):
            raise HttpProblem(HTTP_BAD_REQUEST, "this endpoint takes updates; queries go to "
                              "/query or /sparql")
        await answer_update(scope, send, operation)

    async def answer_update(scope: Scope, send: Send, operation: UpdateRequest) -> None:
        await service.write(scope, partial(dataset.update, operation, config.allow_service,
                                           base_iri=service.base_iri(scope)))
        await send_reply(send, reply(HTTP_NO_CONTENT, None))

    async def papers(request: Request) -> Response:
        return JSONResponse([p.model_dump() for p in dataset.papers()])

    async def health(request: Request) -> Response:
        if healthy():
            return JSONResponse({"status": "ok"})
        return JSONResponse({"status": "the watchdog stopped: query deadlines are not "
                             "enforced"}, status_code=HTTP_SERVER_ERROR)

    async def page(request: Request) -> Response:
        return FileResponse(YASGUI_PAGE if YASGUI_SCRIPT.exists() else PLAIN_PAGE)

    async def prefixes(request: Request) -> Response:
        return JSONResponse(config.prefixes)

    async def examples(request: Request) -> Response:
        return JSONResponse(list(config.examples))

    async def gone(request: Request, exc: Exception) -> Response:
        return Response(status_code=HTTP_BAD_REQUEST)  # the client went away: nobody reads it

    async def problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HttpProblem)
        return PlainTextResponse(f"error: {exc}\n", status_code=exc.status,
                                 headers=problem_headers(exc))

    routes = [Route("/", page), *graph_store_routes(service), Route("/papers", papers),
              Route("/prefixes", prefixes), Route("/examples.json", examples),
              Route("/papers/{paper}/evidence", evidence_route(  # the evidence view (HTML)
                  dataset, run_now, lambda message: HttpProblem(HTTP_NOT_FOUND, message))),
              Route("/healthz", health),
              Mount("/static", StaticFiles(directory=STATIC_DIR), name="static")]
    # the SPARQL endpoints answer before the framework's routing: they are the hot path
    endpoints = {"/query": sparql(query_endpoint, QUERY_METHODS),
                 "/sparql": sparql(query_endpoint, QUERY_METHODS),
                 "/update": sparql(update_endpoint, "POST")}
    app: Handler = Front(endpoints, Starlette(routes=routes, exception_handlers={
        HttpProblem: problem, ClientDisconnect: gone}))
    if config.cors_origins:
        app = CORSMiddleware(app, allow_origins=list(config.cors_origins),
                             allow_methods=["GET", "POST"],
                             allow_headers=["Authorization", "Content-Type"])
    return app


def sparql(endpoint: Handler, methods: str) -> Handler:
    """`endpoint` answering other methods 405 and its refusals as ``error:`` lines."""

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            allow(scope["method"], methods)
            await endpoint(scope, receive, send)
        except ClientDisconnect:  # nothing to answer
            return
        except HttpProblem as exc:
            await send_reply(send, problem_reply(exc, methods))

    return handle


def query_reader(dataset: Dataset, config: ServiceConfig) -> Callable[[Head, bytes], Reply] | None:
    """What a query worker answers a read of /query or /sparql with: the app's answer
    without ASGI messages and coroutines (the hot path); None with CORS (the app's middleware
    answers every request then). What each of the PREPARED latest small requests asks is
    remembered (read from its key only), never its answer: decoding and checking it again
    took a third of a worker's time for an `ASK {}`."""
    if config.cors_origins:
        return None
    service, guard = Service(dataset, config, None), HostGuard(None, allowed=config.allowed_hosts)

    def prepare(head: Head, body: bytes) -> QueryRequest | Reply:
        scope = head.scope()
        if (refused := guard.refusal(scope)) is not None:
            return refused
        try:
            allow(head.method, QUERY_METHODS)
            operation = service.operation(scope, body)
            if isinstance(operation, UpdateRequest):  # the serving process sends those to its app
                raise HttpProblem(HTTP_SERVER_ERROR, "writes are made by the owning process only")
        except HttpProblem as exc:
            return problem_reply(exc, QUERY_METHODS)
        return operation

    prepared = lru_cache(PREPARED)(prepare)

    def read(head: Head, body: bytes) -> Reply:
        key = head._replace(client=None, headers=tuple(
            field for field in head.headers if field[0] in PREPARED_HEADERS))
        size = len(key.query_string) + len(body) + sum(len(value) for _, value in key.headers)
        return service.answer((prepared if size <= PREPARED_BYTES else prepare)(key, body))

    return read


def allow(method: str, methods: str) -> None:
    if method not in methods.split(", "):
        raise HttpProblem(HTTP_METHOD_NOT_ALLOWED, f"use {methods.replace(', ', ' or ')}")


def problem_reply(exc: HttpProblem, methods: str) -> Reply:
    """A refusal as an ``error:`` line (405 says which methods are allowed)."""
    headers = {"Allow": methods} if exc.status == HTTP_METHOD_NOT_ALLOWED \
        else problem_headers(exc)
    return refusal(exc.status, str(exc), headers)


def run_now(job: Callable[[], T]) -> Future[T]:
    """`job` run at once, as a done future (a worker answers one request at a time)."""
    done: Future[T] = Future()
    try:
        done.set_result(job())
    except Exception as exc:
        done.set_exception(exc)
    return done


def problem_headers(exc: HttpProblem) -> dict[str, str] | None:
    return {"WWW-Authenticate": 'Bearer realm="kgctl"'} if exc.status == HTTP_UNAUTHORIZED else None


def authorise(authorization: str | None, token: str | None) -> None:
    """401 without credentials, 403 with wrong ones or when updates are disabled."""
    if token is None:
        raise HttpProblem(HTTP_FORBIDDEN, "updates are disabled on this server "
                          "(start it with --update-token to enable them)")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise HttpProblem(HTTP_UNAUTHORIZED, "updates need an 'Authorization: Bearer <token>' "
                          "header")
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise HttpProblem(HTTP_FORBIDDEN, "wrong update token")
