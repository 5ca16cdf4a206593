"""The serving process: uvicorn on the listening socket, the query workers that answer the
reads, and the writer process that makes the writes, started and stopped together."""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import socket
import sys
import threading
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import uvicorn
import uvloop
from starlette.requests import ClientDisconnect

from kgctl.errors import InputError, StoreError
from kgctl.service.app import MAX_BODY_BYTES, create_app
from kgctl.service.asgi import BodyTooLarge, Handler, Receive, Scope, Send, header, read_body
from kgctl.service.config import ServiceConfig
from kgctl.service.connections import Connection, Room, connection_cap
from kgctl.service.execution import HTTP_UNAVAILABLE, query_timeout
from kgctl.service.hosts import HostGuard
from kgctl.service.protocol import may_write, needs_writer
from kgctl.service.store_writer import StoreWriter
from kgctl.service.views import Checkpoints, Views
from kgctl.service.workers import FIELDS, Workers, refusal

VIEW_GRACE_S = 5.0  # a superseded view is kept this long past the query timeout
HTTP_TOO_LARGE = 413
LOCAL_PATHS = frozenset({"/healthz"})  # answered by the serving process itself


def listen(host: str, port: int) -> socket.socket:
    """A bound TCP socket (it listens once the workers are there), or one clear error (port
    taken, unknown host)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class Dispatch:
    """ASGI app of the serving process: a request that changes the store (and /healthz) is
    answered by `local`, whose dataset writes through the writer process; every other one
    by a query worker, over a view holding every write made before it arrived."""

    def __init__(self, local: Handler, workers: Workers, checkpoints: Checkpoints,
                 config: ServiceConfig) -> None:
        self.local, self.workers, self.checkpoints = local, workers, checkpoints
        self.timeout_s = config.timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope.get("method"), scope.get("path")
        if scope["type"] != "http" or path in LOCAL_PATHS \
                or (may_write(method, path) and path != "/sparql"):
            return await self.local(scope, receive, send)  # writes: the token before the body
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s  # it counts from the request's arrival
        body = b""
        if method == "POST":
            try:
                body = await read_body(receive, MAX_BODY_BYTES, header(scope, b"content-length"))
            except BodyTooLarge as exc:
                return await reply(send, refusal(HTTP_TOO_LARGE, str(exc)), close=True)
            except ClientDisconnect:
                return
            if needs_writer(method, path, header(scope, b"content-type"), body):
                return await self.local(scope, replay(body), send)
        generation = self.checkpoints.published
        if generation < self.checkpoints.written:  # a write this request must see
            try:
                async with asyncio.timeout_at(deadline):
                    generation = await self.checkpoints.fresh()
            except TimeoutError:
                return await reply(send, refusal(HTTP_UNAVAILABLE,
                                                 str(query_timeout(self.timeout_s))))
        await reply(send, await self.workers.answer(FIELDS(scope), body, generation, deadline))


def replay(body: bytes) -> Receive:
    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


async def reply(send: Send, answer, *, close: bool = False) -> None:
    status, headers, body = answer
    if close:  # the request's body was not read: the connection cannot carry another
        headers = [*headers, (b"connection", b"close")]
    if not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def cut_off(tasks: set[asyncio.Task]) -> None:
    """End the requests still running as the service stops: not faults to report."""
    errors = logging.getLogger("uvicorn.error")
    errors.disabled = True
    try:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        errors.disabled = False


class Uvicorn(uvicorn.Server):
    """uvicorn's server without its signal handling (the service has its own) and telling
    when it accepts."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.accepting = asyncio.Event()

    def capture_signals(self):
        return nullcontext()

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        self.accepting.set()


class Server:
    """Serves the store directory `store` (no other process may hold it) on a listening
    socket until `stop()` (or SIGINT/SIGTERM when run in the main thread)."""

    def __init__(self, store: Path, config: ServiceConfig) -> None:
        if not sys.platform.startswith("linux"):
            raise StoreError("kgctl serve runs on Linux only (it stops queries through "
                             "pidfds); run the Docker image elsewhere")
        self.store, self.config = store, config
        self.started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self.write_ended = True  # False: stopped while an update ran (it was not committed)

    def run(self, listener: socket.socket) -> None:
        uvloop.run(self.serve(listener))

    def stop(self) -> None:
        """Stop serving (from any thread)."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)

    async def serve(self, listener: socket.socket) -> None:
        _, most = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._loop.add_signal_handler(signum, self._stopping.set)
        config = self.config
        store = StoreWriter(self.store, config.timeout_s)
        views = Views(store, keep_s=config.timeout_s + VIEW_GRACE_S)
        views.take(0)
        checkpoints = Checkpoints(views, self._loop)
        workers = Workers(views.root, config, lambda: checkpoints.published)
        try:
            await workers.start()
            local = create_app(store, config, checkpoints.changed, workers.healthy)
            app = HostGuard(Dispatch(local, workers, checkpoints, config),
                            allowed=config.allowed_hosts)
            protocol = partial(Connection, room=Room(connection_cap(most)),
                               header_timeout_s=config.header_timeout_s,
                               body_timeout_s=config.body_timeout_s)
            http = Uvicorn(uvicorn.Config(
                app, http=protocol, loop="none", lifespan="off", interface="asgi3",
                log_config=None, log_level="warning", access_log=False, server_header=False,
                proxy_headers=False, timeout_keep_alive=config.header_timeout_s))
            serving = asyncio.ensure_future(http.serve(sockets=[listener]))
            waiting = asyncio.ensure_future(http.accepting.wait())
            await asyncio.wait([serving, waiting], return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                self.started.set()
                await asyncio.wait([serving, asyncio.ensure_future(self._stopping.wait())],
                                   return_when=asyncio.FIRST_COMPLETED)
            http.should_exit = http.force_exit = True
            await serving
            await cut_off(http.server_state.tasks)
        finally:
            await workers.close()
            checkpoints.close()
            self.write_ended = store.close()  # a write still running is killed, uncommitted
            views.close()
