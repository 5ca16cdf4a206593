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
import traceback
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import uvicorn
import uvloop

from kgctl.errors import InputError, StoreError
from kgctl.service.app import HTTP_SERVER_ERROR, MAX_BODY_BYTES, create_app
from kgctl.service.asgi import Gathered, Handler, Head, Reply, header, keep, refusal
from kgctl.service.config import ServiceConfig
from kgctl.service.connections import Connection
from kgctl.service.execution import HTTP_UNAVAILABLE, query_timeout
from kgctl.service.hosts import HostGuard
from kgctl.service.protocol import needs_writer
from kgctl.service.room import Room, connection_cap
from kgctl.service.store_writer import StoreWriter
from kgctl.service.views import Checkpoints, Views
from kgctl.service.workers import Workers

VIEW_GRACE_S = 5.0  # a superseded view is kept this long past the query timeout
# answered by the serving process (with /static/): no store read, a page loads with busy workers
LOCAL_PATHS = frozenset({"/healthz", "/", "/prefixes", "/examples.json"})
HELD_ANSWERS = 4  # read bodies, and answers not taken, hold at most this many --max-bytes


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


class Reads:
    """The requests of the serving process that a query worker answers: all but those that
    may change the store (and LOCAL_PATHS), which uvicorn runs on `local`, whose dataset writes
    through the writer process. A read is answered over a view holding every write made
    before it arrived; its deadline counts from then."""

    def __init__(self, local: Handler, workers: Workers, checkpoints: Checkpoints,
                 config: ServiceConfig) -> None:
        self.local, self.workers, self.checkpoints = local, workers, checkpoints
        self.timeout_s, self.max_body = config.timeout_s, MAX_BODY_BYTES
        self.tasks: set[asyncio.Task] = set()  # the rare requests that wait in this process

    def takes(self, method: str, path: str, content_type: str | None) -> bool:
        local = path in LOCAL_PATHS or path.startswith("/static/")
        # a form posted to /sparql may hold an update: `submit` reads it
        return not local and not needs_writer(method, path, content_type, b"")

    def submit(self, head: Head, body: bytes, answered: Callable[[Reply], None]) -> None:
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        if body and needs_writer(head.method, head.path, header(head, b"content-type"), body):
            return keep(self.tasks, self._write(head, body, answered))
        generation = self.checkpoints.published
        if generation < self.checkpoints.written:  # a write this request must see
            return keep(self.tasks, self._fresh(head, body, deadline, answered))
        self.workers.submit(head, body, generation, deadline, answered)

    async def _fresh(self, head: Head, body: bytes, deadline: float,
                     answered: Callable[[Reply], None]) -> None:
        try:
            async with asyncio.timeout_at(deadline):
                generation = await self.checkpoints.fresh()
        except TimeoutError:
            return answered(refusal(HTTP_UNAVAILABLE, str(query_timeout(self.timeout_s))))
        self.workers.submit(head, body, generation, deadline, answered)

    async def _write(self, head: Head, body: bytes, answered: Callable[[Reply], None]) -> None:
        gathered = Gathered(body)
        try:
            await self.local(head.scope(), gathered.receive, gathered.send)
        except Exception:  # a fault of ours: logged, the client gets a 500
            traceback.print_exc(file=sys.stderr)
        answered(gathered.reply() or refusal(HTTP_SERVER_ERROR, "internal server error"))


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
        store = StoreWriter(self.store, config.timeout_s, config.worker_memory_mb)
        views = Views(store, keep_s=config.timeout_s + VIEW_GRACE_S)
        views.take(0)
        checkpoints = Checkpoints(views, self._loop)
        workers = Workers(views.root, config, lambda: checkpoints.published)
        try:
            await workers.start()
            local = HostGuard(create_app(store, config, checkpoints.changed, workers.healthy),
                              allowed=config.allowed_hosts)
            reads = Reads(local, workers, checkpoints, config)
            # the descriptors past the cap: half for the connections accepted at once (the
            # listen backlog: each turn of the loop accepts what waits), a quarter for those
            # refused for room while they linger, the rest for the workers, files and writes
            spare = most - connection_cap(most)
            room = Room(most - spare, beyond=spare // 4, memory=HELD_ANSWERS * config.max_bytes)
            protocol = partial(Connection, room=room, reads=reads,
                               header_timeout_s=config.header_timeout_s,
                               body_timeout_s=config.body_timeout_s)
            http = Uvicorn(uvicorn.Config(
                local, http=protocol, loop="none", lifespan="off", interface="asgi3",
                log_config=None, log_level="warning", access_log=False, server_header=False,
                proxy_headers=False, timeout_keep_alive=config.header_timeout_s,
                backlog=spare // 2))
            serving = asyncio.ensure_future(http.serve(sockets=[listener]))
            waiting = asyncio.ensure_future(http.accepting.wait())
            await asyncio.wait([serving, waiting], return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                self.started.set()
                await asyncio.wait([serving, asyncio.ensure_future(self._stopping.wait())],
                                   return_when=asyncio.FIRST_COMPLETED)
            http.should_exit = http.force_exit = True
            await serving
            await cut_off(http.server_state.tasks | reads.tasks)
        finally:
            await workers.close()
            checkpoints.close()
            self.write_ended = store.close()  # a write still running is killed, uncommitted
            views.close()
