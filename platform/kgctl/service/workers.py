"""Query worker processes that can really be stopped.

Each read request runs in a worker process over a read-only view of the store (the owning
process keeps the only writer). A query that passes its deadline is killed with its process,
so it stops using CPU at once, and a fresh worker takes its place. Every query first gets a
short budget; one that outlasts it becomes *long*: only ``max_long`` long queries run at a
time (a further one is answered 503 at once), and each long query hands its pool seat to a
new worker, so a burst of runaway queries never leaves cheap queries without a worker.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import socket
from dataclasses import dataclass
from multiprocessing.process import BaseProcess

from kgctl.service import evaluator
from kgctl.service.evaluator import FRAME
from kgctl.service.execution import (
    HTTP_UNAVAILABLE,
    Answer,
    GraphRequest,
    HttpProblem,
    Limits,
    QueryRequest,
    query_timeout,
)

HTTP_SERVER_ERROR = 500
SHORT_BUDGET_S = 0.25  # a query running longer than this is a long query
QUEUE_WAIT_S = 60.0  # longest wait for a free worker before the query is answered 503
START_S = 60.0


@dataclass(eq=False)
class Worker:
    process: BaseProcess
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def ask(self, payload: bytes) -> Answer:
        self.writer.write(FRAME.pack(len(payload)) + payload)
        header = await self.reader.readexactly(FRAME.size)
        status, media_type, body = pickle.loads(
            await self.reader.readexactly(FRAME.unpack(header)[0]))
        return Answer(status=status, media_type=media_type, body=body)


class QueryWorkers:
    """`size` worker processes for read requests plus at most `max_long` long-running ones."""

    def __init__(self, store_path: str, *, size: int, max_long: int, limits: Limits,
                 timeout_s: float) -> None:
        self._path, self._size, self._max_long = store_path, size, max_long
        self._limits, self._timeout_s = limits, timeout_s
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["kgctl.service.evaluator"])
        self._idle: asyncio.Queue[Worker] = asyncio.Queue()
        self._long = 0
        self._pending: set[asyncio.Task] = set()
        self._all: set[Worker] = set()
        self.generation = 0  # bumped by the writer: workers reopen their view

    async def start(self) -> None:
        await asyncio.gather(*(self._add() for _ in range(self._size)))

    async def close(self) -> None:
        for task in self._pending:
            task.cancel()
        for worker in list(self._all):
            self._retire(worker)

    async def run(self, request: QueryRequest | GraphRequest) -> Answer:
        """The answer within the time limit, or 503 (timed out, or too many long queries)."""
        try:
            worker = await asyncio.wait_for(self._idle.get(), QUEUE_WAIT_S)
        except TimeoutError:
            raise HttpProblem(HTTP_UNAVAILABLE, f"server busy: no query worker was free for "
                              f"{QUEUE_WAIT_S:g} s; retry later") from None
        payload = pickle.dumps((self.generation, request), protocol=pickle.HIGHEST_PROTOCOL)
        reply = asyncio.ensure_future(worker.ask(payload))
        long = False
        try:
            done, _ = await asyncio.wait({reply}, timeout=min(SHORT_BUDGET_S, self._timeout_s))
            if not done and self._timeout_s > SHORT_BUDGET_S:
                if self._long >= self._max_long:
                    raise HttpProblem(HTTP_UNAVAILABLE, f"server busy: {self._max_long} long "
                                      "queries are running; retry later")
                long, self._long = True, self._long + 1
                self._replace()  # the long query's seat in the pool goes to a new worker
                done, _ = await asyncio.wait({reply}, timeout=self._timeout_s - SHORT_BUDGET_S)
            if not done:
                raise query_timeout(self._timeout_s)
            answer = reply.result()
        except asyncio.IncompleteReadError:
            self._retire(worker, replace=not long)
            raise HttpProblem(HTTP_SERVER_ERROR, "the query worker stopped (out of memory?); "
                              "narrow the query") from None
        except BaseException:
            reply.cancel()
            self._retire(worker, replace=not long)
            raise
        finally:
            if long:
                self._long -= 1
        if long:
            self._retire(worker)
        else:
            self._idle.put_nowait(worker)
        return answer

    def _replace(self) -> None:
        task = asyncio.create_task(self._add())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _add(self) -> None:
        ours, theirs = socket.socketpair()
        process = self._context.Process(target=evaluator.serve, daemon=True,
                                        args=(theirs, self._path, self._limits))
        await asyncio.wait_for(asyncio.to_thread(process.start), START_S)
        theirs.close()
        reader, writer = await asyncio.open_connection(sock=ours)
        worker = Worker(process, reader, writer)
        self._all.add(worker)
        self._idle.put_nowait(worker)

    def _retire(self, worker: Worker, *, replace: bool = False) -> None:
        """Kill the worker's process (wherever it is) and reap it; optionally start another."""
        self._all.discard(worker)
        worker.writer.close()
        worker.process.kill()
        task = asyncio.ensure_future(asyncio.to_thread(worker.process.join))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        if replace:
            self._replace()
