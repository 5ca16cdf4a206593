"""One client floods a shared MCP server with sessions it keeps alive; can another still work?

`kgctl mcp serve` over streamable HTTP (default caps: 1,000 sessions, 100 per client). The flood
opens N sessions with raw HTTP and pings every one it still holds (as a ping every 20 s would);
then the official SDK client opens a session and binds a paper, and the flood pings again.
Three floods: unnamed from the SDK client's own address (so the same client by address),
naming itself with `Mcp-Client-Id`, and naming every session differently (forged identities).

    python scripts/bench_mcp_flood.py [--flood 1200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mcp_helpers import http_server  # noqa: E402

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "flood", "version": "0"}}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
PARALLEL = 16


async def _each(items: list, fn) -> list:
    """fn(item) for every item, PARALLEL at a time; the results in order."""
    results: list = [None] * len(items)
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def one(i: int) -> None:
        async with limiter:
            results[i] = await fn(items[i])

    async with anyio.create_task_group() as group:
        for i in range(len(items)):
            group.start_soon(one, i)
    return results


async def flood(url: str, n: int, naming: str) -> None:
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=PARALLEL)) as http:
        def named(i: int) -> dict:
            return {"flood": {"mcp-client-id": "flood"}, "forged": {"mcp-client-id": f"id-{i}"},
                    "unnamed": {}}[naming]

        async def open_one(i: int) -> tuple[int, str | None]:
            answer = await http.post(url, json=INIT, headers={**ACCEPT, **named(i)})
            return answer.status_code, answer.headers.get("mcp-session-id")

        async def ping(item: tuple[int, str]) -> int:
            i, session = item
            answer = await http.post(url, json=PING, headers={**ACCEPT, **named(i),
                                                              "mcp-session-id": session})
            return answer.status_code

        started = time.perf_counter()
        opened = await _each(list(range(n)), open_one)
        sessions = [(i, s) for i, (status, s) in enumerate(opened) if status == 200]
        refused = sum(status != 200 for status, _ in opened)
        alive = [item for item, status in zip(sessions, await _each(sessions, ping), strict=True)
                 if status == 200]
        flood_s = time.perf_counter() - started
        started = time.perf_counter()
        try:
            async with Client(url) as other:
                opened_s = time.perf_counter() - started
                bound = await other.call_tool("select_paper", {"paper_id": "other"})
                call_s = time.perf_counter() - started - opened_s
                works = f"works ({call_s * 1000:.0f} ms)" if not bound.is_error \
                    else f"refused: {bound.content[0].text}"
                kept = sum(s == 200 for s in await _each(alive, ping))
                again = await other.call_tool("select_paper", {"paper_id": "other"})
                works += "; after the flood's pings it still works" if not again.is_error \
                    else "; then refused"
        except Exception as exc:  # noqa: BLE001 - the figure is whether it opens at all
            print(f"flood ({naming}): {n} sessions opened ({refused} refused) in {flood_s:.1f} "
                  f"s, {len(alive)} alive; the other client FAILED: {exc!r}")
            return
        print(f"flood ({naming}): {n} sessions opened ({refused} refused) in {flood_s:.1f} s, "
              f"{len(alive)} alive after a ping each; the other client's session opened in "
              f"{opened_s * 1000:.0f} ms and select_paper {works}; "
              f"the flood's sessions still alive after it: {kept}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=1200)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for naming in ("unnamed", "flood", "forged"):
            with http_server(["mcp", "serve", "--store", str(Path(tmp) / naming)]) as url:
                anyio.run(flood, url, opts.flood, naming)


if __name__ == "__main__":
    main()
