"""The HTTP service: SPARQL 1.1 Protocol, Graph Store Protocol GET, paper list and web page.

Routes: ``/query`` and ``/sparql`` (queries; ``/sparql`` also takes updates by POST),
``/update``, ``/store`` (graph download), ``/papers`` (JSON), ``/healthz``, ``/`` (page) and
``/static/*``. Queries run in a bounded pool of worker threads, updates in their own single
writer thread, so neither runaway queries nor readers hold up writers.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pyoxigraph import serialize
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kgctl.errors import StoreError
from kgctl.evaluation.evidence_page import evidence_route
from kgctl.service.dataset import Dataset
from kgctl.service.execution import (
    HTTP_BAD_REQUEST,
    HTTP_NOT_FOUND,
    HTTP_UNAVAILABLE,
    Answer,
    HttpProblem,
    Limits,
    QueryRequest,
    choose,
    graph_of,
    query_timeout,
    run_query,
)
from kgctl.service.negotiation import GRAPH_TYPES
from kgctl.service.protocol import UpdateRequest, parse_operation
from kgctl.service.workers import WorkerPool

STATIC_DIR = Path(__file__).resolve().parent / "static"
HTTP_NO_CONTENT = 204
HTTP_UNAUTHORIZED = 401
HTTP_FORBIDDEN = 403
HTTP_TOO_LARGE = 413
HTTP_SERVER_ERROR = 500
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_WORKERS = 8
MAX_BODY_BYTES = 1_000_000
# the worker may still be serialising when the deadline passes; give it a moment to answer
ANSWER_GRACE_S = 0.5
QUEUE_WAIT_S = 60.0  # longest wait for a free worker before the query is answered 503


class ServiceConfig(BaseModel):
    """How `kgctl serve` behaves; every limit is an option of the command."""

    model_config = ConfigDict(frozen=True)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_rows: int = DEFAULT_MAX_ROWS
    workers: int = DEFAULT_WORKERS
    update_token: str | None = None  # None: updates disabled
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all
    union_default: bool = False  # default graph = union of all graphs

    @property
    def limits(self) -> Limits:
        return Limits(timeout_s=self.timeout_s, max_rows=self.max_rows)


def create_app(dataset: Dataset, config: ServiceConfig) -> Starlette:
    """The ASGI application serving `dataset` (run it with uvicorn)."""
    readers = WorkerPool(config.workers, name="kgctl-query")
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgctl-update")

    async def answer_query(operation: QueryRequest) -> Response:
        # The time limit runs from when a worker starts the query: waiting in the queue behind
        # other clients' queries is not the query's fault (only a full, stuck pool ends it).
        loop = asyncio.get_running_loop()
        started = asyncio.Event()
        cancel = threading.Event()

        def job() -> Answer:
            loop.call_soon_threadsafe(started.set)
            if cancel.is_set():  # its client was answered while it waited
                raise query_timeout(config.timeout_s)
            return run_query(dataset, operation, limits=config.limits, cancel=cancel)

        future = readers.submit(job)
        try:
            await asyncio.wait_for(started.wait(), QUEUE_WAIT_S)
        except TimeoutError:
            cancel.set()
            raise HttpProblem(HTTP_UNAVAILABLE, f"server busy: no query worker was free for "
                              f"{QUEUE_WAIT_S:g} s; retry later") from None
        try:
            answer = await asyncio.wait_for(asyncio.wrap_future(future),
                                            config.timeout_s + ANSWER_GRACE_S)
        except TimeoutError:
            cancel.set()  # a streaming query stops at its next row
            if future.running():  # pyoxigraph may be stuck before row one
                readers.replace_stuck()
            raise query_timeout(config.timeout_s) from None
        return Response(answer.body, media_type=answer.media_type)

    async def answer_update(request: Request, operation: UpdateRequest) -> Response:
        authorise(request, config.update_token)
        try:
            await asyncio.wrap_future(writer.submit(dataset.update, operation.update))
        except SyntaxError as exc:
            raise HttpProblem(HTTP_BAD_REQUEST, f"invalid SPARQL update: {exc}") from None
        except StoreError as exc:
            raise HttpProblem(HTTP_SERVER_ERROR, str(exc)) from None
        return Response(status_code=HTTP_NO_CONTENT)

    async def operation_of(request: Request):
        body = await read_body(request) if request.method == "POST" else b""
        return parse_operation(request.method, request.headers.get("content-type"),
                               request.query_params.multi_items(), body,
                               accept=request.headers.get("accept"), union=config.union_default)

    async def query_endpoint(request: Request) -> Response:
        operation = await operation_of(request)
        if isinstance(operation, UpdateRequest):
            if request.url.path == "/query":
                raise HttpProblem(HTTP_BAD_REQUEST, "send updates to /update or /sparql")
            return await answer_update(request, operation)
        return await answer_query(operation)

    async def update_endpoint(request: Request) -> Response:
        operation = await operation_of(request)
        if not isinstance(operation, UpdateRequest):
            raise HttpProblem(HTTP_BAD_REQUEST, "this endpoint takes updates; queries go to "
                              "/query or /sparql")
        return await answer_update(request, operation)

    async def graph_store(request: Request) -> Response:
        params = request.query_params
        graph = graph_of(params.get("graph"), default="default" in params)
        fmt = choose(QueryRequest(query="-", accept=request.headers.get("accept"),
                                  format=params.get("format")), GRAPH_TYPES)
        if not dataset.has_graph(graph):
            raise HttpProblem(HTTP_NOT_FOUND, f"no graph {graph} in this store")

        def dump() -> bytes:
            return serialize((q.triple for q in dataset.graph_quads(graph)), format=fmt)

        body = await asyncio.wrap_future(readers.submit(dump))
        return Response(body if request.method == "GET" else b"", media_type=fmt.media_type)

    async def papers(request: Request) -> Response:
        listing = await asyncio.wrap_future(readers.submit(dataset.papers))
        return JSONResponse([p.model_dump() for p in listing])

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html")

    async def problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HttpProblem)
        headers = {"WWW-Authenticate": 'Bearer realm="kgctl"'} \
            if exc.status == HTTP_UNAUTHORIZED else None
        return PlainTextResponse(f"error: {exc}\n", status_code=exc.status, headers=headers)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        readers.shutdown()
        writer.shutdown(wait=True)

    routes = [
        Route("/", page),
        Route("/query", query_endpoint, methods=["GET", "POST"]),
        Route("/sparql", query_endpoint, methods=["GET", "POST"]),
        Route("/update", update_endpoint, methods=["POST"]),
        Route("/store", graph_store, methods=["GET", "HEAD"]),
        Route("/papers", papers),
        Route("/papers/{paper}/evidence", evidence_route(  # the evidence view (HTML)
            dataset, readers.submit, lambda message: HttpProblem(HTTP_NOT_FOUND, message))),
        Route("/healthz", health),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    middleware = [Middleware(CORSMiddleware, allow_origins=list(config.cors_origins),
                             allow_methods=["GET", "POST"],
                             allow_headers=["Authorization", "Content-Type"])
                  ] if config.cors_origins else []
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                     exception_handlers={HttpProblem: problem})


def authorise(request: Request, token: str | None) -> None:
    """401 without credentials, 403 with wrong ones or when updates are disabled."""
    if token is None:
        raise HttpProblem(HTTP_FORBIDDEN, "updates are disabled on this server "
                          "(start it with --update-token to enable them)")
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise HttpProblem(HTTP_UNAUTHORIZED, "updates need an 'Authorization: Bearer <token>' "
                          "header")
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise HttpProblem(HTTP_FORBIDDEN, "wrong update token")


async def read_body(request: Request) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HttpProblem(HTTP_TOO_LARGE, f"request body over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
