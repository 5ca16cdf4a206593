"""`kgctl reference serve` stopped by SIGTERM leaves no oxigraph process behind."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from grounding_helpers import build_small_reference

from kgctl.grounding.server import free_port

READY_S = 120  # a cold start on a loaded machine; the test waits for the line, not the time


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _servers_of(store) -> list[int]:
    """Pids of the processes serving `store` (read from /proc, so no port is involved)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(store).encode() in cmdline.read_bytes().split(b"\0"):
                found.append(int(cmdline.parent.name))
        except OSError:  # the process ended while being read
            continue
    return found


def test_sigterm_stops_the_server_process_too(tmp_path):
    reference = build_small_reference(tmp_path / "species")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "reference", "serve",
         "--store", str(reference), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()  # printed once the endpoint answers
        assert "SPARQL endpoint" in line, process.stderr.read()
        assert _answers(port)
        assert len(_servers_of(reference)) == 2  # kgctl and its oxigraph
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=READY_S) == 0
        deadline = time.monotonic() + READY_S
        while _servers_of(reference) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _servers_of(reference)  # by store, not port: a parallel run may reuse it
    finally:
        process.kill()
        process.wait()
