"""The service process: the listening socket, the front door, the query workers and the
writer, started and stopped together.

The listening socket is created with ``IPPROTO_TCP`` so asyncio sets ``TCP_NODELAY`` on every
accepted connection (with protocol 0 it does not, and a response written in two parts meets
Nagle's algorithm plus delayed ACK: a 40 ms stall).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading

import uvloop

from kgctl.errors import InputError, StoreError
from kgctl.service.app import Writer, create_app
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.exchange import Request, exchange, simple_response
from kgctl.service.execution import HttpProblem
from kgctl.service.front import Connection, Limits
from kgctl.service.protocol import needs_writer
from kgctl.service.spawner import Spawner
from kgctl.service.workers import SLOTS, QueryWorkers, ResponseStarted

BACKLOG = 2048
MAX_QUERY_BODY_BYTES = 1_000_000


def listen(host: str, port: int) -> socket.socket:
    """A bound TCP listening socket, or one clear error (port taken, unknown host)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class Server:
    """Serves `dataset` on a listening socket until `stop()` (or SIGINT/SIGTERM when run in
    the main thread)."""

    def __init__(self, dataset: Dataset, config: ServiceConfig) -> None:
        if dataset.path is None:
            raise StoreError("the service needs a store directory (its workers open it "
                             "read-only)")
        self.dataset, self.config = dataset, config
        self.started = threading.Event()
        self._writer = Writer()
        self._app = create_app(dataset, config, self._writer)
        self._limits = Limits(header_timeout_s=config.header_timeout_s,
                              body_timeout_s=config.body_timeout_s,
                              max_body_bytes=max(config.max_bytes, MAX_QUERY_BODY_BYTES))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    def run(self, listener: socket.socket) -> None:
        uvloop.run(self.serve(listener))

    def stop(self) -> None:
        """Stop serving (from any thread)."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)

    async def serve(self, listener: socket.socket) -> None:
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._loop.add_signal_handler(signum, self._stopping.set)
        spawner = Spawner(str(self.dataset.path), self.config, SLOTS)
        self._workers = QueryWorkers(spawner, size=self.config.workers,
                                     max_long=self.config.long_queries,
                                     timeout_s=self.config.timeout_s)
        try:
            await self._workers.start()
            front = await self._loop.create_server(
                lambda: Connection(self._answer, self._limits), sock=listener, backlog=BACKLOG)
            self.started.set()
            await self._stopping.wait()
            front.close()
        finally:
            await self._workers.close()
            spawner.close()
            self._writer.close()

    async def _answer(self, connection: Connection, request: Request) -> bool:
        """Have `request` answered: writes here, everything else by a query worker."""
        path = request.target.partition(b"?")[0].decode("latin-1")
        if needs_writer(request.method, path, request.header(b"content-type"), request.body):
            return await exchange(self._app, request, connection.transport.write)
        try:
            return await self._workers.run(request, connection.fd,
                                           generation=self._writer.generation)
        except ResponseStarted:
            return False
        except HttpProblem as problem:
            connection.transport.write(simple_response(
                problem.status, f"error: {problem}\n".encode(), keep_alive=request.keep_alive))
            return request.keep_alive
