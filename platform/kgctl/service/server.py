"""The service process: the listening socket, the query workers that answer on it, and the
writer, started and stopped together."""

from __future__ import annotations

import asyncio
import resource
import signal
import socket
import sys
import threading
from pathlib import Path

import uvloop

from kgctl.errors import InputError, StoreError
from kgctl.service.app import create_app
from kgctl.service.config import ServiceConfig
from kgctl.service.evaluator import SO_TIMESTAMP
from kgctl.service.room import Clock
from kgctl.service.spawner import Spawner
from kgctl.service.store_writer import StoreWriter
from kgctl.service.views import Checkpoints, Views
from kgctl.service.worker_state import bump_written
from kgctl.service.workers import SLOTS, QueryWorkers
from kgctl.service.writes import answer_write

VIEW_GRACE_S = 5.0  # a superseded view is kept this long past the query timeout


def listen(host: str, port: int) -> socket.socket:
    """A bound TCP socket (it listens once the workers are there), or one clear error (port
    taken, unknown host)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)  # a deadline counts from arrival
        sock.bind((host, port))
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class Server:
    """Serves the store directory `store` (no other process may hold it) on a listening
    socket until `stop()` (or SIGINT/SIGTERM when run in the main thread)."""

    def __init__(self, store: Path, config: ServiceConfig) -> None:
        if not sys.platform.startswith("linux"):
            raise StoreError("kgctl serve runs on Linux only (its workers use pidfd, memfd and "
                             "descriptor passing); run the Docker image elsewhere")
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
        # this process and each worker hold a descriptor of every connection
        _, most = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._loop.add_signal_handler(signum, self._stopping.set)
        store = StoreWriter(self.store, self.config.timeout_s)
        views = Views(store, keep_s=self.config.timeout_s + VIEW_GRACE_S)
        views.take(0)
        spawner = Spawner(str(views.root), self.config, listener, SLOTS)

        checkpoints = Checkpoints(views, spawner.block)

        def written() -> None:  # after each write
            bump_written(spawner.block)
            checkpoints.changed()

        app = create_app(store, self.config, written)  # it answers writes only
        tasks: set[asyncio.Task] = set()

        def take(clock: Clock, sock: socket.socket) -> None:
            task = asyncio.ensure_future(answer(clock, sock))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        async def answer(clock: Clock, sock: socket.socket) -> None:
            ident, waiting, deadline = clock
            if await answer_write(app, sock, self.config, waiting, deadline):
                workers.give_back(ident)
            else:
                workers.drop(ident)

        workers = QueryWorkers(spawner, size=self.config.workers,
                               max_long=self.config.long_queries,
                               timeout_s=self.config.timeout_s,
                               header_timeout_s=self.config.header_timeout_s,
                               body_timeout_s=self.config.body_timeout_s, take=take)
        try:
            await workers.start(listener)
            self.started.set()
            await self._stopping.wait()
        finally:
            for task in tasks:
                task.cancel()
            await workers.close()
            spawner.close()
            checkpoints.close()
            self.write_ended = store.close()  # a write still running is killed, uncommitted
            views.close()
