"""Shared helpers of the service tests: a live server on a free loopback port over a store
directory, and the MOP-30 graph rebuilt by replaying the bundled traces (once per process)."""

from __future__ import annotations

import atexit
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from pyoxigraph import Quad, Store

from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.seed import pack_quads
from kgctl.service.server import Server, listen

STARTUP_S = 30.0
PAPER = "10.1021_ja105986b"
PAPER_GRAPH = f"https://w3id.org/kgctl/paper/{PAPER}"


@cache
def sample_quads() -> tuple[Quad, ...]:
    return tuple(pack_quads())


def disk_store(path: Path | None = None) -> Store:
    """An empty store in a directory (a fresh temporary one unless given): the server's query
    workers open the directory, so a served store is never in memory only."""
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="kgctl-service-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    store = Store(str(path))
    _directories[id(store)] = path
    return store


def sample_store(path: Path | None = None) -> Store:
    """The MOP-30 graphs in a store directory (a fresh temporary one unless given)."""
    store = disk_store(path)
    store.extend(sample_quads())
    store.flush()
    return store


_directories: dict[int, Path] = {}  # a pyoxigraph Store does not tell its directory


def _directory(store: Store) -> Path:
    return _directories[id(store)]


@contextmanager
def live_server(store: Store | Dataset, config: ServiceConfig | None = None) -> Iterator[str]:
    """Serve a store directory on 127.0.0.1 in a thread; yields the base URL; stops after."""
    dataset = store if isinstance(store, Dataset) else Dataset(store, _directory(store))
    server = Server(dataset, config or ServiceConfig())
    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    thread = threading.Thread(target=server.run, args=(listener,), daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_S
    while not server.started.wait(0.05):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("service did not start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        thread.join(STARTUP_S)
        listener.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
