"""Deliberately simple SPARQL endpoints, measured beside `kgctl serve` by bench_service.py.

uvicorn (httptools, uvloop) runs kgctl's own ASGI app in one process. Two designs:
  inline     the app answers queries in the event loop, as any Starlette app would: nothing
             stops a runaway query and one core serves everything;
  pool       /query is answered by a ProcessPoolExecutor of N processes, each over the store
             opened read-only (no writes happen during the benchmark); the rest by the app;
             a pool task cannot be stopped once running, so no timeout is enforced.

Run: python scripts/simple_service.py STORE PORT [--design D] [--processes N]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from urllib.parse import parse_qsl

import uvicorn
from pyoxigraph import Store

from kgctl.service.app import create_app
from kgctl.service.asgi import Reply, header, refusal, send_reply
from kgctl.service.config import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_WORKERS, ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.execution import HttpProblem, Limits, answer
from kgctl.service.protocol import parse_operation

# not a ServiceConfig: its defaults read the ontologies, and worker processes import this script
LIMITS = Limits(max_rows=DEFAULT_MAX_ROWS, max_bytes=DEFAULT_MAX_BYTES)
_dataset: Dataset | None = None


def _open(store: str) -> None:
    global _dataset
    _dataset = Dataset(Store.read_only(store))


def _answer(params: list[tuple[str, str]], accept: str | None) -> Reply:
    assert _dataset is not None
    try:
        operation = parse_operation("GET", None, params, b"", accept=accept)
    except HttpProblem as exc:
        return refusal(exc.status, str(exc))
    return answer(_dataset, operation, LIMITS)


def pooled(app, pool: ProcessPoolExecutor):
    """`app` with GET /query answered by `pool`."""

    async def handle(scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] != "/query" or scope["method"] != "GET":
            return await app(scope, receive, send)
        params = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        await send_reply(send, await asyncio.get_running_loop().run_in_executor(
            pool, _answer, params, header(scope, b"accept")))

    return handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store")
    parser.add_argument("port", type=int)
    parser.add_argument("--design", choices=("inline", "pool"), default="inline")
    parser.add_argument("--processes", type=int, default=DEFAULT_WORKERS)
    args = parser.parse_args()
    app = create_app(Dataset(Store.read_only(args.store)), ServiceConfig())
    pool = ProcessPoolExecutor(args.processes, multiprocessing.get_context("forkserver"),
                               initializer=_open, initargs=(args.store,))  # not forks of the
    try:  # serving process
        uvicorn.run(pooled(app, pool) if args.design == "pool" else app, host="127.0.0.1",
                    port=args.port, loop="uvloop", http="httptools", log_level="warning",
                    access_log=False, lifespan="off")
    finally:
        pool.shutdown(cancel_futures=True)


if __name__ == "__main__":
    main()
