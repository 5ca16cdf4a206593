"""Shared helpers of the service tests: a live server on a free loopback port over a store
directory, and the MOP-30 graph rebuilt by replaying the bundled traces (once per process).

The server's writer process owns the directory, so a test reads what is stored through a
`ServedStore`: every read opens the directory read-only afresh (it sees every committed
write)."""

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

import httptools
import httpx
from pyoxigraph import Quad, Store

from kgctl.pipeline.seed import pack_quads
from kgctl.service.config import ServiceConfig
from kgctl.service.server import Server, listen

STARTUP_S = 30.0
PAPER = "10.1021_ja105986b"
PAPER_GRAPH = f"https://w3id.org/kgctl/paper/{PAPER}"


@cache
def sample_quads() -> tuple[Quad, ...]:
    return tuple(pack_quads())


class ServedStore:
    """A store directory that tests read while a server writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _reader(self) -> Store:
        return _retried(lambda: Store.read_only(str(self.path)))

    def __len__(self) -> int:
        return _retried(lambda: len(Store.read_only(str(self.path))))

    def query(self, *args, **kwargs):
        return self._reader().query(*args, **kwargs)

    def quads_for_pattern(self, *args):
        return self._reader().quads_for_pattern(*args)


def _retried(read):
    """`read()` again while it fails on a table file that is gone: the server's writer compacts
    the directory, and a file the manifest named can vanish before a reader opens it."""
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            return read()
        except RuntimeError as exc:
            if "No such file" not in str(exc) or time.monotonic() > deadline:
                raise


def disk_store(path: Path | None = None) -> ServedStore:
    """An empty store directory (a fresh temporary one unless given)."""
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="kgctl-service-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    Store(str(path)).flush()  # created, and closed at once
    return ServedStore(path)


def sample_store(path: Path | None = None) -> ServedStore:
    """The MOP-30 graphs in a store directory (a fresh temporary one unless given)."""
    served = disk_store(path)
    store = Store(str(served.path))
    store.extend(sample_quads())
    store.flush()
    return served


@contextmanager
def live_server(store: ServedStore | Path, config: ServiceConfig | None = None
                ) -> Iterator[str]:
    """Serve a store directory on 127.0.0.1 in a thread (two query workers unless `config`
    says otherwise); yields the base URL; stops after."""
    server = Server(store.path if isinstance(store, ServedStore) else store,
                    config or ServiceConfig(workers=2))
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


PAGE_ROUTES = ("/", "/static/style.css", "/static/results.js", "/static/yasgui-page.js",
               "/static/yasgui/yasgui.min.js", "/static/yasgui/yasgui.min.css", "/papers",
               "/prefixes", "/examples.json")


def warm_up(url: str, deadline: float) -> None:
    """Ask for everything the query page loads until each answers: on a busy machine a
    worker's first requests can take long enough to be answered 503 (server busy)."""
    for path in PAGE_ROUTES:
        while (status := httpx.get(url + path, timeout=STARTUP_S).status_code) == 503:
            assert time.monotonic() < deadline, f"{path} still busy"
            time.sleep(0.1)
        assert status == 200, (path, status)


class Responses:
    """Whole HTTP responses, as (status, body), parsed from the bytes fed as they come."""

    def __init__(self) -> None:
        self.done: list[tuple[int, bytes]] = []
        self._body: list[bytes] = []
        self._parser = httptools.HttpResponseParser(self)

    def feed(self, data: bytes) -> None:
        self._parser.feed_data(data)

    def on_body(self, chunk: bytes) -> None:
        self._body.append(chunk)

    def on_message_complete(self) -> None:
        self.done.append((self._parser.get_status_code(), b"".join(self._body)))
        self._body.clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
