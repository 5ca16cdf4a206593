"""The HTTP service: SPARQL 1.1 Protocol, Graph Store Protocol, paper list and web page.

Routes (the table at the end of `create_app`): ``/query`` and ``/sparql`` (queries; ``/sparql``
also takes updates by POST; a bare GET answers the service description), ``/update``,
``/store`` (Graph Store Protocol, ``?graph=`` or ``?default``; ``/store/...`` identifies a
graph by its own URL), ``/papers`` and ``/prefixes`` (JSON), ``/healthz``, ``/`` (page) and
``/static/*``.
Reads run in killable worker processes (kgctl.service.workers); writes run in this process,
one at a time, in a writer thread.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import cache, partial
from pathlib import Path
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict
from pyoxigraph import RdfFormat
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kgctl.errors import StoreError
from kgctl.evaluation.evidence_page import evidence_route
from kgctl.service.asgi import (
    BodyTooLarge,
    Front,
    Handler,
    Receive,
    Scope,
    Send,
    header,
    read_body,
    respond,
)
from kgctl.service.dataset import Dataset
from kgctl.service.description import describe
from kgctl.service.execution import (
    HTTP_BAD_REQUEST,
    HTTP_NOT_FOUND,
    HTTP_OK,
    TEXT,
    GraphRequest,
    HttpProblem,
    Limits,
    QueryRequest,
    choose,
)
from kgctl.service.federation import check_remote
from kgctl.service.graph_store import graph_store_routes
from kgctl.service.hosts import LOOPBACK_NAMES, HostGuard, request_url
from kgctl.service.negotiation import GRAPH_TYPES
from kgctl.service.protocol import UpdateRequest, parse_operation
from kgctl.service.update_dataset import with_dataset
from kgctl.service.workers import QueryWorkers

STATIC_DIR = Path(__file__).resolve().parent / "static"
# YASGUI is fetched at build time (scripts/fetch_yasgui.py); without it the page is a plain editor
YASGUI_PAGE, PLAIN_PAGE = STATIC_DIR / "yasgui.html", STATIC_DIR / "index.html"
YASGUI_SCRIPT = STATIC_DIR / "yasgui" / "yasgui.min.js"
HTTP_NO_CONTENT = 204
HTTP_UNAUTHORIZED = 401
HTTP_FORBIDDEN = 403
HTTP_METHOD_NOT_ALLOWED = 405
HTTP_REQUEST_TIMEOUT = 408
HTTP_TOO_LARGE = 413
HTTP_SERVER_ERROR = 500
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_MAX_BYTES = 64_000_000
DEFAULT_WORKERS = 8
DEFAULT_LONG_QUERIES = 2
DEFAULT_BODY_TIMEOUT_S = 30.0
MAX_BODY_BYTES = 1_000_000


class ServiceConfig(BaseModel):
    """How `kgctl serve` behaves; every limit is an option of the command."""

    model_config = ConfigDict(frozen=True)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_BYTES
    workers: int = DEFAULT_WORKERS
    long_queries: int = DEFAULT_LONG_QUERIES
    update_token: str | None = None  # None: updates disabled
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all
    union_default: bool = False  # default graph = union of all graphs
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES  # Host headers answered ('*': any)
    allow_service: tuple[str, ...] = ()  # endpoints SERVICE / LOAD may contact
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    base_iri: str | None = None  # None: the URL of the endpoint the request went to

    @property
    def limits(self) -> Limits:
        return Limits(max_rows=self.max_rows, max_bytes=self.max_bytes)


class Service:
    """What the request handlers share: the dataset, its workers, the writer and the config."""

    def __init__(self, dataset: Dataset, config: ServiceConfig) -> None:
        if dataset.path is None:
            raise StoreError("the service needs a store directory (its workers open it "
                             "read-only)")
        self.dataset, self.config = dataset, config
        self.workers = QueryWorkers(str(dataset.path), size=config.workers,
                                    max_long=config.long_queries, limits=config.limits,
                                    timeout_s=config.timeout_s)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgctl-update")

    async def read(self, request: QueryRequest | GraphRequest) -> Response:
        status, media_type, body = await self.workers.run(request)
        return Response(body, status_code=status, media_type=media_type)

    def authorise(self, scope: Scope) -> None:
        authorise(header(scope, b"authorization"), self.config.update_token)

    async def write(self, scope: Scope, change: Callable[[], object]) -> object:
        """Run `change` in the writer thread once the bearer token is checked; readers see it
        from their next request on."""
        self.authorise(scope)
        try:
            return await asyncio.wrap_future(self._writer.submit(change))
        except SyntaxError as exc:
            raise HttpProblem(HTTP_BAD_REQUEST, f"invalid input: {exc}") from None
        except StoreError as exc:
            raise HttpProblem(HTTP_SERVER_ERROR, str(exc)) from None
        finally:
            self.workers.generation += 1

    async def body(self, receive: Receive, limit: int = MAX_BODY_BYTES) -> bytes:
        """The request body, 413 past `limit`, 408 when it does not arrive in time."""
        try:
            return await asyncio.wait_for(read_body(receive, limit), self.config.body_timeout_s)
        except TimeoutError:
            raise HttpProblem(HTTP_REQUEST_TIMEOUT, "request body not received in time") from None
        except BodyTooLarge as exc:
            raise HttpProblem(HTTP_TOO_LARGE, str(exc)) from None

    def base_iri(self, scope: Scope) -> str:
        """The configured base IRI, else the URL the request went to (without its query)."""
        return self.config.base_iri or request_url(scope)

    async def start(self) -> None:
        await self.workers.start()

    async def stop(self) -> None:
        await self.workers.close()
        self._writer.shutdown(wait=True)


def create_app(dataset: Dataset, config: ServiceConfig) -> Handler:
    """The ASGI application serving `dataset` (run it with kgctl.service.server)."""
    service = Service(dataset, config)
    # the evidence view reads a paper's graph and provenance in this process, off the loop
    evidence_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgctl-evidence")

    async def query_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        params = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        if method in ("GET", "HEAD") and not params:
            return await description(scope, send)
        body = await service.body(receive) if method == "POST" else b""
        operation = parse_operation(method, header(scope, b"content-type"), params, body,
                                    accept=header(scope, b"accept"), union=config.union_default,
                                    base_iri=service.base_iri(scope))
        if isinstance(operation, UpdateRequest):
            if scope["path"] == "/query":
                raise HttpProblem(HTTP_BAD_REQUEST, "send updates to /update or /sparql")
            return await answer_update(scope, send, operation)
        check_remote(operation.query, config.allow_service)
        await respond(send, *await service.workers.run(operation))

    async def update_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        operation = parse_operation("POST", header(scope, b"content-type"),
                                    parse_qsl(scope["query_string"].decode("latin-1"),
                                              keep_blank_values=True),
                                    await service.body(receive))
        if not isinstance(operation, UpdateRequest):
            raise HttpProblem(HTTP_BAD_REQUEST, "this endpoint takes updates; queries go to "
                              "/query or /sparql")
        await answer_update(scope, send, operation)

    async def answer_update(scope: Scope, send: Send, operation: UpdateRequest) -> None:
        check_remote(operation.update, config.allow_service)
        text = with_dataset(operation.update, operation.using_graphs,
                            operation.using_named_graphs)
        await service.write(scope, partial(dataset.update, text, base_iri=service.base_iri(scope)))
        await respond(send, HTTP_NO_CONTENT, None)

    async def description(scope: Scope, send: Send) -> None:
        fmt: RdfFormat = choose(GraphRequest(graph=None, accept=header(scope, b"accept")),
                                GRAPH_TYPES)
        body = describe(request_url(scope), fmt, updates=config.update_token is not None,
                        union_default=config.union_default)
        await respond(send, HTTP_OK, fmt.media_type, body)

    async def papers(request: Request) -> Response:
        listing = await asyncio.to_thread(dataset.papers)
        return JSONResponse([p.model_dump() for p in listing])

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def page(request: Request) -> Response:
        return FileResponse(YASGUI_PAGE if YASGUI_SCRIPT.exists() else PLAIN_PAGE)

    async def prefixes(request: Request) -> Response:
        return JSONResponse(ontology_prefixes())

    async def problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HttpProblem)
        return PlainTextResponse(f"error: {exc}\n", status_code=exc.status,
                                 headers=problem_headers(exc))

    @asynccontextmanager
    async def lifespan(app: Starlette):
        await service.start()
        yield
        await service.stop()

    routes = [
        Route("/", page),
        *graph_store_routes(service),
        Route("/papers", papers),
        Route("/prefixes", prefixes),
        Route("/papers/{paper}/evidence", evidence_route(  # the evidence view (HTML)
            dataset, evidence_pool.submit,
            lambda message: HttpProblem(HTTP_NOT_FOUND, message))),
        Route("/healthz", health),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    # the SPARQL endpoints answer before the framework's routing: they are the hot path
    endpoints = {"/query": sparql(query_endpoint, "GET, HEAD, POST"),
                 "/sparql": sparql(query_endpoint, "GET, HEAD, POST"),
                 "/update": sparql(update_endpoint, "POST")}
    app: Handler = Front(endpoints, Starlette(routes=routes, lifespan=lifespan,
                                              exception_handlers={HttpProblem: problem}))
    app = HostGuard(app, allowed=config.allowed_hosts)
    if config.cors_origins:
        app = CORSMiddleware(app, allow_origins=list(config.cors_origins),
                             allow_methods=["GET", "POST"],
                             allow_headers=["Authorization", "Content-Type"])
    return app


def sparql(endpoint: Handler, methods: str) -> Handler:
    """`endpoint` answering other methods 405 and its refusals as ``error:`` lines."""
    allowed = methods.split(", ")

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if scope["method"] not in allowed:
                raise HttpProblem(HTTP_METHOD_NOT_ALLOWED, f"use {methods.replace(', ', ' or ')}")
            await endpoint(scope, receive, send)
        except HttpProblem as exc:
            headers = {"Allow": methods} if exc.status == HTTP_METHOD_NOT_ALLOWED \
                else problem_headers(exc)
            await respond(send, exc.status, TEXT, f"error: {exc}\n".encode(), headers)

    return handle


def problem_headers(exc: HttpProblem) -> dict[str, str] | None:
    if exc.status == HTTP_UNAUTHORIZED:
        return {"WWW-Authenticate": 'Bearer realm="kgctl"'}
    return None


@cache
def ontology_prefixes() -> dict[str, str]:
    """Prefix -> namespace of the bundled ontologies, for the query page."""
    from kgctl.ontology import default_ir  # loaded on first use: serving does not need it

    return dict(default_ir().prefixes)


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
