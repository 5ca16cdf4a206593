"""A deliberately simple SPARQL endpoint, measured beside `kgctl serve` by bench_service.py.

uvicorn (httptools, uvloop) runs kgctl's own ASGI app in one process. Two variants:
  inline  the app answers queries in the event loop, as any Starlette app would: nothing
          stops a runaway query and one core serves everything;
  pool    /query is answered by a ProcessPoolExecutor of N processes, each over the store
          opened read-only (no writes happen during the benchmark); the rest by the app.
Neither enforces --timeout (a pool task cannot be stopped once running), which is what the
serving design of `kgctl serve` adds (docs/service.md).

Run: python scripts/simple_service.py STORE PORT [POOL_PROCESSES]   (0: inline)
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import parse_qsl

import uvicorn
from pyoxigraph import Store

from kgctl.service.app import create_app
from kgctl.service.asgi import header, respond
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.execution import TEXT, HttpProblem, answer
from kgctl.service.protocol import parse_operation

CONFIG = ServiceConfig()
_dataset: Dataset | None = None


def _open(store: str) -> None:
    global _dataset
    _dataset = Dataset(Store.read_only(store))


def _answer(params: list[tuple[str, str]], accept: str | None) -> tuple[int, str, bytes]:
    assert _dataset is not None
    try:
        operation = parse_operation("GET", None, params, b"", accept=accept)
    except HttpProblem as exc:
        return exc.status, TEXT, f"error: {exc}\n".encode()
    reply = answer(_dataset, operation, CONFIG.limits)
    return reply.status, reply.media_type, reply.body


def pooled(app, pool: ProcessPoolExecutor):
    """`app` with GET /query answered by `pool`."""

    async def handle(scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] != "/query" or scope["method"] != "GET":
            return await app(scope, receive, send)
        params = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        status, media_type, body = await asyncio.get_running_loop().run_in_executor(
            pool, _answer, params, header(scope, b"accept"))
        await respond(send, status, media_type, body)

    return handle


def main() -> None:
    store, port = sys.argv[1], int(sys.argv[2])
    processes = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    app = create_app(Dataset(Store.read_only(store), Path(store)), CONFIG)
    pool = ProcessPoolExecutor(max(processes, 1), get_context("forkserver"),  # not forks of
                               initializer=_open, initargs=(store,))  # the serving process
    try:
        uvicorn.run(pooled(app, pool) if processes else app, host="127.0.0.1", port=port,
                    loop="uvloop", http="httptools", log_level="warning", access_log=False,
                    lifespan="off")
    finally:
        pool.shutdown(cancel_futures=True)


if __name__ == "__main__":
    main()
