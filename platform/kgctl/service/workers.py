"""Query worker processes that can really be stopped.

Each read request runs in a worker process over a read-only view of the store (the owning
process keeps the only writer). A query that passes its deadline is killed with its process,
so it stops using CPU at once, and a fresh worker takes its place.

A burst of runaway queries must not starve cheap ones. Every query first gets a short budget;
when it is spent, a query that has really computed (CPU time, not time spent waiting for a
core) becomes *long*: its worker leaves the pool (a new one takes its seat), runs at a lower
CPU priority, and retires afterwards. Only ``max_long`` long queries run at once; past that a
computing query is stopped (503) at the end of a shorter budget, so a burst drains quickly and
cheap queries keep finding a worker and a core.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import socket
from collections import deque
from pathlib import Path

from kgctl.service.evaluator import FRAME
from kgctl.service.execution import (
    HTTP_UNAVAILABLE,
    GraphRequest,
    HttpProblem,
    Limits,
    QueryRequest,
    query_timeout,
)
from kgctl.service.spawner import Spawner

HTTP_SERVER_ERROR = 500
SHORT_BUDGET_S = 0.25  # wall time before a computing query counts as long
BUSY_BUDGET_S = 0.05  # the same while the long lane is full
COMPUTING_CPU_S = 0.01  # CPU time within the budget that marks a query as computing
LONG_NICENESS = 10  # long queries yield the cores to short ones
QUEUE_WAIT_S = 60.0  # longest wait for a free worker before the query is answered 503
START_S = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
Reply = tuple[int, str, bytes]  # status, media type, body


class Worker(asyncio.Protocol):
    """The owning process's end of one worker's socket: one request, one framed reply."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._handle = os.pidfd_open(pid)  # signals reach this process, never a reused pid
        self.transport: asyncio.Transport | None = None
        self.cpu_s = 0.0  # the worker's CPU time when it was last idle
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._buffer = bytearray()
        self._reply: asyncio.Future[Reply] | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport

    def ask(self, payload: bytes) -> asyncio.Future[Reply]:
        self._reply = asyncio.get_running_loop().create_future()
        if self.transport is None or self.transport.is_closing():  # it died while idle
            self._reply.set_exception(ConnectionError("the query worker stopped"))
        else:
            self.transport.write(FRAME.pack(len(payload)) + payload)
        return self._reply

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) < FRAME.size:
            return
        size = FRAME.unpack_from(self._buffer)[0]
        if len(self._buffer) < FRAME.size + size:
            return
        message = pickle.loads(self._buffer[FRAME.size:FRAME.size + size])
        del self._buffer[:FRAME.size + size]
        if not self.ready.done():  # the first frame: started, with the CPU time that took
            self.cpu_s = message
            self.ready.set_result(None)
        elif self._reply and not self._reply.done():
            status, media_type, body, self.cpu_s = message
            self._reply.set_result((status, media_type, body))

    def connection_lost(self, exc: Exception | None) -> None:
        for waiting in (self.ready, self._reply):
            if waiting is not None and not waiting.done():
                waiting.set_exception(ConnectionError("the query worker stopped"))

    def computing(self) -> bool:
        """Whether the current query has used real CPU time (True where that is unknown)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return True
        used = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS - self.cpu_s
        return used >= COMPUTING_CPU_S

    def lower_priority(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, self.pid, LONG_NICENESS)
        except OSError:  # already gone: nothing to slow down
            pass

    def kill(self) -> None:
        if self._reply is not None:
            self._reply.cancel()  # no one waits for it any more
        try:
            signal.pidfd_send_signal(self._handle, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self._handle)
        if self.transport is not None:
            self.transport.close()


class QueryWorkers:
    """`size` pooled worker processes plus at most `max_long` running long queries."""

    def __init__(self, store_path: str, *, size: int, max_long: int, limits: Limits,
                 timeout_s: float) -> None:
        self._path, self._size, self._max_long = store_path, size, max_long
        self._limits, self._timeout_s = limits, timeout_s
        self._spawner: Spawner | None = None
        self._idle: list[Worker] = []
        self._waiting: deque[asyncio.Future[Worker]] = deque()
        self._long = 0
        self._background: set[asyncio.Future] = set()
        self._all: set[Worker] = set()
        self.generation = 0  # bumped by the writer: workers reopen their view

    async def start(self) -> None:
        self._spawner = Spawner(self._path, self._limits)
        await asyncio.gather(*(self._add() for _ in range(self._size)))

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        for worker in list(self._all):
            self._all.discard(worker)
            worker.kill()
        if self._spawner is not None:
            self._spawner.close()

    async def run(self, request: QueryRequest | GraphRequest) -> Reply:
        """(status, media type, body) within the time limit, or 503. A read that loses its
        worker (a view opened while the writer switched files) is tried once more."""
        try:
            return await self._run_once(request)
        except ConnectionError:
            pass
        try:
            return await self._run_once(request)
        except ConnectionError:
            raise HttpProblem(HTTP_SERVER_ERROR, "the query worker stopped (out of memory?); "
                              "narrow the query") from None

    async def _run_once(self, request: QueryRequest | GraphRequest) -> Reply:
        worker = self._idle.pop() if self._idle else await self._wait_for_worker()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        reply = worker.ask(pickle.dumps((self.generation, request), pickle.HIGHEST_PROTOCOL))
        long = False
        try:
            while not reply.done():
                left = deadline - loop.time()
                if left <= 0:
                    raise query_timeout(self._timeout_s)
                if long:
                    await _within(reply, left)
                    continue
                budget = SHORT_BUDGET_S if self._long < self._max_long else BUSY_BUDGET_S
                await _within(reply, min(budget, left))
                if reply.done() or loop.time() >= deadline or not worker.computing():
                    continue
                if self._long >= self._max_long:
                    raise HttpProblem(HTTP_UNAVAILABLE, f"server busy: {self._max_long} long "
                                      "queries are running; retry later")
                long, self._long = True, self._long + 1
                worker.lower_priority()
                self._start(self._add())  # its seat in the pool goes to a new worker
            answer = reply.result()
        except BaseException:
            self._retire(worker, replace=not long)
            raise
        finally:
            if long:
                self._long -= 1
        if long:
            self._retire(worker, replace=False)
        else:
            self._release(worker)
        return answer

    async def _wait_for_worker(self) -> Worker:
        loop = asyncio.get_running_loop()
        seat: asyncio.Future[Worker] = loop.create_future()
        self._waiting.append(seat)
        timer = loop.call_later(QUEUE_WAIT_S, _settle, seat)
        try:
            worker = await seat
        except asyncio.CancelledError:
            if seat.done() and not seat.cancelled() and seat.result() is not None:
                self._release(seat.result())  # handed a worker just as its request ended
            raise
        finally:
            timer.cancel()
        if worker is None:
            raise HttpProblem(HTTP_UNAVAILABLE, f"server busy: no query worker was free for "
                              f"{QUEUE_WAIT_S:g} s; retry later")
        return worker

    def _release(self, worker: Worker) -> None:
        while self._waiting:
            seat = self._waiting.popleft()
            if not seat.done():
                seat.set_result(worker)
                return
        self._idle.append(worker)

    async def _add(self) -> None:
        assert self._spawner is not None
        ours, theirs = socket.socketpair()
        with theirs:
            pid = await asyncio.wait_for(asyncio.to_thread(self._spawner.spawn, theirs), START_S)
        loop = asyncio.get_running_loop()
        _, worker = await loop.create_connection(lambda: Worker(pid), sock=ours)
        self._all.add(worker)
        await asyncio.wait_for(worker.ready, START_S)
        self._release(worker)

    def _retire(self, worker: Worker, *, replace: bool) -> None:
        """Kill the worker's process (wherever it is) and start another if asked."""
        self._all.discard(worker)
        worker.kill()
        if replace:
            self._start(self._add())

    def _start(self, job) -> None:
        task = asyncio.ensure_future(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _settle(future: asyncio.Future, value=None) -> None:
    if not future.done():
        future.set_result(value)


async def _within(future: asyncio.Future, seconds: float) -> None:
    """Wait until `future` is done or `seconds` have passed (lighter than asyncio.wait)."""
    if future.done():
        return
    wake = asyncio.get_running_loop().create_future()
    timer = asyncio.get_running_loop().call_later(seconds, _settle, wake)
    future.add_done_callback(lambda _: _settle(wake))
    try:
        await wake
    finally:
        timer.cancel()
