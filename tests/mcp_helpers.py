"""Shared helpers of the MCP tests and scripts/bench_mcp.py: an MCP server as a subprocess over
streamable HTTP, and a session that writes syntheses into one paper."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp import Client

KGCTL = [sys.executable, "-c", "from kgctl.cli import main; main()"]
READY_WITHIN_S = 120.0  # generous: a busy 2-core machine
POLL_S = 0.05
ONTOSYN = "https://www.theworldavatar.com/kg/OntoSyn/"
SYNTHESES = f"SELECT ?s WHERE {{ ?s a <{ONTOSYN}ChemicalSynthesis> }}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(args: list[str]) -> Iterator[str]:
    """Run `kgctl ARGS --transport http --port P`; yield the MCP endpoint it prints once it
    accepts connections; stop it (SIGTERM, so it closes its store) afterwards."""
    port = free_port()
    with tempfile.TemporaryFile() as log:  # a file, not a pipe: a full pipe would block it
        process = subprocess.Popen([*KGCTL, *args, "--transport", "http", "--port", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=log)

        def printed() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")

        try:
            deadline = time.monotonic() + READY_WITHIN_S
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"server exited: {printed()[-500:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("server did not start") from None
                    time.sleep(POLL_S)
            url = f"http://127.0.0.1:{port}/mcp"
            if not printed().startswith(f"MCP endpoint: {url} "):
                raise RuntimeError(f"server did not print its endpoint: {printed()[:300]}")
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def write_syntheses(url: str, paper: str, labels: list[str]) -> list[dict[str, Any]]:
    """One MCP session: bind `paper`, then create one synthesis per label; the results."""
    async with Client(url) as client:
        bound = await client.call_tool("select_paper", {"paper_id": paper})
        assert not bound.is_error, bound.content[0].text
        results = []
        for label in labels:
            result = await client.call_tool("create_chemical_synthesis", {
                "label": label, "chemical_output": {"label": f"{label} product"}})
            assert not result.is_error, result.content[0].text
            results.append(result.structured_content)
        return results
