"""The query worker process: answers requests from a read-only view of the store.

It receives one request at a time with the client's connection, runs the service's app on it
in this process and writes the response straight to the client, then tells the owning process
whether the connection may carry another request and how much CPU time it has used. It
reopens its view when the owning process says the store has changed (a RocksDB read-only view
is a snapshot taken when it is opened). It has no timer: the owning process kills it at the
deadline.
"""

from __future__ import annotations

import asyncio
import mmap
import socket
import time
from pathlib import Path

from pyoxigraph import Store

from kgctl.service import messages
from kgctl.service.app import create_app
from kgctl.service.asgi import Handler
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.exchange import exchange
from kgctl.service.spawner import IDLE, WRITING

OPEN_ATTEMPTS = 5
OPEN_RETRY_S = 0.02


def open_view(store_path: str) -> Store:
    """A read-only view; retried, since the writer may be switching files while it opens."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return Store.read_only(store_path)
        except OSError:
            if attempt == OPEN_ATTEMPTS - 1:
                raise
            time.sleep(OPEN_RETRY_S)
    raise AssertionError("unreachable")


def worker_app(store_path: str, config: ServiceConfig) -> Handler:
    return create_app(Dataset(open_view(store_path), Path(store_path)), config)


def serve(control: socket.socket, states: mmap.mmap, slot: int, store_path: str,
          config: ServiceConfig) -> None:
    """The worker's main loop (until the owning process closes `control`)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    states[slot] = IDLE
    app, seen = worker_app(store_path, config), 0
    messages.send(control, time.process_time())  # ready; CPU time spent starting up
    while (message := messages.receive(control)) is not None:
        (generation, request), fds = message
        if generation != seen:
            app, seen = worker_app(store_path, config), generation
        with socket.socket(fileno=fds[0]) as client:  # closes this process's copy only
            # a timeout keeps the shared connection non-blocking for the owning process too
            client.settimeout(config.timeout_s)
            keep_alive = loop.run_until_complete(exchange(app, request, Output(client, states,
                                                                               slot).write))
        states[slot] = IDLE
        # the CPU time used so far lets the owner tell a computing request from a waiting one
        messages.send(control, (keep_alive, time.process_time()))


class Output:
    """Writes to the client, first marking the worker's slot: from then on only closing the
    connection is left to the owning process if this worker is stopped."""

    def __init__(self, client: socket.socket, states: mmap.mmap, slot: int) -> None:
        self._client, self._states, self._slot = client, states, slot

    def write(self, data: bytes) -> None:
        self._states[self._slot] = WRITING
        self._client.sendall(data)
