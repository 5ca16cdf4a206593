"""Shared builders for the store tests."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.store.base import CallRecord, Evidence
from kgctl.store.iris import mint_iri

EX = "https://example.org/onto/"
TIME = "2024-05-01T12:00:00+00:00"


def step_triples(paper: str, n: int, *, size: int = 3) -> list[Triple]:
    """`size` triples describing step n of a paper (distinct per paper and n)."""
    node = mint_iri(paper, EX + "Step", f"step {n}")
    out = [Triple(node, NamedNode(EX + "hasOrder"), Literal(str(n)))]
    out += [Triple(node, NamedNode(EX + f"p{i}"), Literal(f"value {n}.{i} \"q\" }} # é"))
            for i in range(size - 1)]
    return out


def record(paper: str, n: int, *, seq: int = 0, evidence: bool = False) -> CallRecord:
    return CallRecord(
        paper_id=paper, seq=seq, tool="add_step", arguments={"order": n, "note": "x\ny"},
        iris=(mint_iri(paper, EX + "Step", f"step {n}").value,), time=TIME,
        evidence=Evidence(quote=f"Step {n} was done.", section="2.1", start=n, end=n + 10)
        if evidence else None,
    )


OXIGRAPH = Path(sys.executable).with_name("oxigraph")
STARTUP_S = 20.0
POLL_S = 0.05


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OxigraphServer:
    """A real `oxigraph serve` process on a free loopback port (stop() kills it)."""

    def __init__(self, location: Path, port: int | None = None) -> None:
        self.location = location
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/query"
        self.process = subprocess.Popen(
            [str(OXIGRAPH), "serve", "--location", str(location), "--bind",
             f"127.0.0.1:{self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url, params={"query": "ASK {}"}).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(POLL_S)
        self.stop()
        raise RuntimeError("oxigraph serve did not start")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
