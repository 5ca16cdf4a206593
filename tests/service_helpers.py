"""Shared helpers of the service tests: a live server on a free loopback port, and the MOP-30
graph rebuilt by replaying the bundled traces (once per test process)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import uvicorn
from pyoxigraph import Quad, Store

from kgctl.service.app import ServiceConfig, create_app
from kgctl.service.dataset import Dataset
from kgctl.service.seed import mop30_quads

STARTUP_S = 10.0
PAPER = "10.1021_ja105986b"
PAPER_GRAPH = f"https://w3id.org/kgctl/paper/{PAPER}"


@cache
def sample_quads() -> tuple[Quad, ...]:
    return tuple(mop30_quads())


def sample_store() -> Store:
    store = Store()
    store.extend(sample_quads())
    return store


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def live_server(store: Store, config: ServiceConfig | None = None) -> Iterator[str]:
    """Serve `store` on 127.0.0.1 in a thread; yields the base URL; stops the server after."""
    app = create_app(Dataset(store), config or ServiceConfig())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("service did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STARTUP_S)
