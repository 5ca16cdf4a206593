"""Run the `oxigraph` SPARQL server (from the `oxigraph` PyPI package) on a reference store."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kgctl.errors import InputError, StoreError

STARTUP_TIMEOUT_S = 30.0
POLL_S = 0.1
LOOPBACK = "127.0.0.1"


def oxigraph_binary() -> str:
    """The `oxigraph` executable next to the running Python, else on PATH."""
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.is_file() else shutil.which("oxigraph")
    if found is None:
        raise StoreError("the `oxigraph` server binary is not installed (pip install oxigraph)")
    return found


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def start_server(store: Path, *, host: str = LOOPBACK, port: int | None = None,
                 read_only: bool = True) -> tuple[subprocess.Popen, str]:
    """Start the server on `store`; returns the process and its SPARQL query URL."""
    if not Path(store).is_dir():
        raise InputError(f"no reference store at {store}; run `kgctl reference build`")
    port = port or free_port(host)
    mode = "serve-read-only" if read_only else "serve"
    process = subprocess.Popen(
        [oxigraph_binary(), mode, "--location", str(store), "--bind", f"{host}:{port}",
         "--union-default-graph"],  # minted entities live in a named graph
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://{host}:{port}/query"
    try:
        _wait_ready(process, url)
    except BaseException:  # not ready, or interrupted (Ctrl-C, SIGTERM): never left running
        stop_server(process)
        raise
    return process, url


def _wait_ready(process: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StoreError(f"oxigraph server exited: {process.stderr.read().decode()[-300:]}")
        try:
            urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=1).close()
            return
        except OSError:
            time.sleep(POLL_S)
    raise StoreError(f"oxigraph server did not answer on {url} within {STARTUP_TIMEOUT_S} s")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
