"""Deliberately simple SPARQL endpoints, measured beside `kgctl serve` by bench_service.py.

uvicorn (httptools, uvloop) runs kgctl's own ASGI app in one process. Three designs:
  inline     the app answers queries in the event loop, as any Starlette app would: nothing
             stops a runaway query and one core serves everything;
  pool       /query is answered by a ProcessPoolExecutor of N processes, each over the store
             opened read-only (no writes happen during the benchmark); the rest by the app;
             a pool task cannot be stopped once running, so --timeout is not enforced;
  pool-kill  each query of /query and /sparql goes to one of N long-lived worker processes
             over a socket pair; a worker whose query passes --timeout is killed and
             replaced, and runaways are kept from starving cheap queries as `kgctl serve`
             does (a short budget, then at most two long queries; docs/service.md). Its
             decisions are pool_decisions.py, beside this script.

Run: python scripts/simple_service.py STORE PORT [--design D] [--processes N] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import pickle
import resource
import signal
import socket
import struct
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

import uvicorn
import uvloop
from pool_decisions import Job, Pool, Promote, Run, Spawn, Stop  # beside this script
from pyoxigraph import Store

from kgctl.service.app import MAX_BODY_BYTES, create_app
from kgctl.service.asgi import BodyTooLarge, Handler, header, read_body, respond
from kgctl.service.config import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WORKERS,
    ServiceConfig,
)
from kgctl.service.dataset import Dataset
from kgctl.service.execution import TEXT, HttpProblem, Limits, QueryRequest, answer
from kgctl.service.federation import check_remote
from kgctl.service.hosts import HostGuard, request_url
from kgctl.service.protocol import parse_operation

# not a ServiceConfig: its defaults read the ontologies, and worker processes import this script
LIMITS = Limits(max_rows=DEFAULT_MAX_ROWS, max_bytes=DEFAULT_MAX_BYTES)
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
    reply = answer(_dataset, operation, LIMITS)
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


# --- pool-kill (with pool_decisions.py) -----------------------------------------------------


def work(channel: socket.socket, store: str, limits: Limits, memory_mb: int) -> None:
    """A worker process: answers the queries its channel brings, one at a time, with kgctl's
    execution code over the store opened read-only. Ends when the channel closes."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    dataset = Dataset(Store.read_only(store))
    channel.sendall(b"R")  # ready
    stream = channel.makefile("rb")
    while size := stream.read(4):
        request = pickle.loads(stream.read(int.from_bytes(size, "big")))  # our own process's
        reply = answer(dataset, request, limits)
        head = struct.pack("!IHB", 3 + len(reply.media_type) + len(reply.body), reply.status,
                           len(reply.media_type))
        channel.sendall(head + reply.media_type.encode() + reply.body)


@dataclass(eq=False)
class Worker:
    process: multiprocessing.process.BaseProcess
    pidfd: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    job: Job | None = None


class Workers:
    """Carries out a Pool's decisions on worker processes, forked by multiprocessing's fork
    server (a zygote that imported pyoxigraph and kgctl once), killed through a pidfd."""

    def __init__(self, store: str, config: ServiceConfig) -> None:
        self.store, self.config = store, config
        # as many spares as seats: a burst of runaways has every seat's worker killed at once
        self.pool = Pool(config.workers, config.workers, config.timeout_s, self._cpu_s,
                         config.long_queries)
        self.context = multiprocessing.get_context("forkserver")
        # a child imports this script again (the fork server does not, CPython 3.11): what the
        # script imports is imported once, by the fork server
        self.context.set_forkserver_preload(["kgctl.service.app", "uvicorn", "uvloop"])
        self.starter = ThreadPoolExecutor(1)  # starts and joins processes, one at a time
        self.ticks = os.sysconf("SC_CLK_TCK")  # /proc/<pid>/stat counts CPU time in these

    async def start(self) -> None:
        await asyncio.gather(*(self._spawn() for _ in self.pool.start()))
        asyncio.create_task(self._watch())

    async def query(self, request: QueryRequest) -> tuple[int, str, bytes]:
        loop = asyncio.get_running_loop()
        job = Job(loop.time() + self.config.timeout_s,
                  (pickle.dumps(request), loop.create_future()))
        self._do(self.pool.submit(job, loop.time()))
        return await job.task[1]

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(0.01)
            try:
                self._do(self.pool.tick(loop.time()))
            except Exception:  # a fault of ours: the next ticks must still enforce deadlines
                traceback.print_exc()

    def _do(self, actions: list) -> None:
        for action in actions:
            if isinstance(action, Run):
                action.worker.job = action.job
                payload = action.job.task[0]
                action.worker.writer.write(len(payload).to_bytes(4, "big") + payload)
            elif isinstance(action, Stop):
                if action.worker is not None:
                    with suppress(ProcessLookupError):  # it may have ended meanwhile
                        signal.pidfd_send_signal(action.worker.pidfd, signal.SIGKILL)
                if not action.job.task[1].done():
                    action.job.task[1].set_result((action.status, TEXT,
                                                   f"error: {action.message}\n".encode()))
            elif isinstance(action, Spawn):
                asyncio.create_task(self._spawn())
            elif isinstance(action, Promote):
                with suppress(ProcessLookupError):
                    os.setpriority(os.PRIO_PROCESS, action.worker.process.pid, 10)
            else:  # Retire
                action.worker.writer.close()

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            ours, theirs = socket.socketpair()
            process = self.context.Process(target=work, daemon=True, args=(
                theirs, self.store, self.config.limits, self.config.worker_memory_mb))
            try:
                await loop.run_in_executor(self.starter, process.start)
                theirs.close()
                reader, writer = await asyncio.open_unix_connection(sock=ours)
                await reader.readexactly(1)
                break
            except (OSError, asyncio.IncompleteReadError) as exc:
                print(f"error: a query worker did not start ({exc}); retrying", file=sys.stderr)
                ours.close()
                theirs.close()
                await asyncio.sleep(1.0)
        worker = Worker(process, os.pidfd_open(process.pid), reader, writer)
        asyncio.create_task(self._serve(worker))
        self._do(self.pool.ready(worker, loop.time()))

    async def _serve(self, worker: Worker) -> None:
        """Answer `worker`'s jobs with its replies until its process ends."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                size, status, media = struct.unpack("!IHB", await worker.reader.readexactly(7))
                reply = await worker.reader.readexactly(size - 3)
                if worker.job is not None and not worker.job.task[1].done():
                    worker.job.task[1].set_result((status, reply[:media].decode(),
                                                   reply[media:]))
                self._do(self.pool.finished(worker, loop.time()))
        except (OSError, asyncio.IncompleteReadError):
            self._do(self.pool.ended(worker, loop.time()))
        worker.writer.close()
        os.close(worker.pidfd)
        await loop.run_in_executor(self.starter, worker.process.join)
        worker.process.close()

    def _cpu_s(self, worker: Worker) -> float:
        try:
            with open(f"/proc/{worker.process.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / self.ticks


def dispatching(app: Handler, workers: Workers, config: ServiceConfig) -> Handler:
    """`app` with the queries sent to /query and /sparql evaluated by `workers`; anything else
    (updates, refusals, the service description, other routes) is the app's."""

    async def handle(scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] not in ("/query", "/sparql") \
                or scope["method"] not in ("GET", "POST"):
            return await app(scope, receive, send)
        try:
            body = await read_body(receive, MAX_BODY_BYTES) if scope["method"] == "POST" else b""
        except BodyTooLarge as exc:
            return await respond(send, 413, TEXT, f"error: {exc}\n".encode())
        try:
            operation = parse_operation(
                scope["method"], header(scope, b"content-type"),
                parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True),
                body, accept=header(scope, b"accept"), union=config.union_default,
                base_iri=config.base_iri or request_url(scope))
            if isinstance(operation, QueryRequest):
                check_remote(operation.query, config.allow_service, update=False)
        except HttpProblem:
            operation = None
        if not isinstance(operation, QueryRequest):

            async def again() -> dict:
                return {"type": "http.request", "body": body, "more_body": False}

            return await app(scope, again, send)
        await respond(send, *await workers.query(operation))

    return HostGuard(handle, allowed=config.allowed_hosts)


async def serve_pool_kill(store: str, port: int, config: ServiceConfig) -> None:
    workers = Workers(store, config)
    await workers.start()
    app = create_app(Dataset(Store.read_only(store), Path(store)), config)
    await uvicorn.Server(uvicorn.Config(
        dispatching(app, workers, config), host="127.0.0.1", port=port, loop="none",
        http="httptools", log_level="warning", access_log=False, lifespan="off")).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store")
    parser.add_argument("port", type=int)
    parser.add_argument("--design", choices=("inline", "pool", "pool-kill"), default="inline")
    parser.add_argument("--processes", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    args = parser.parse_args()
    if args.design == "pool-kill":
        config = ServiceConfig(workers=args.processes, timeout_s=args.timeout)
        return uvloop.run(serve_pool_kill(args.store, args.port, config))
    app = create_app(Dataset(Store.read_only(args.store), Path(args.store)), ServiceConfig())
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
