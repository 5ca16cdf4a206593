"""Query worker processes that answer requests themselves and can really be stopped.

The front door (kgctl.service.front) reads each request; a read is handed to an idle worker
together with the client's connection, and the worker writes the response straight to the
client over a read-only view of the store (the owning process keeps the only writer). A
request that passes its deadline is killed with its process, so it stops using CPU at once;
the owning process, which still holds the connection, answers 503 unless the worker had begun
its response, and a fresh worker takes the seat.

A burst of runaway queries must not starve cheap ones. Every request first gets a short budget;
when it is spent, a request that has really computed (CPU time, not time spent waiting for a
core) becomes *long*: its worker leaves the pool (a new one takes its seat), runs at a lower
CPU priority, and retires afterwards. Only ``max_long`` long requests run at once; past that a
computing request is stopped (503) at the end of a shorter budget, so a burst drains quickly
and cheap requests keep finding a worker and a core.
"""

from __future__ import annotations

import asyncio
import mmap
import os
import signal
import socket
from collections import deque
from pathlib import Path

from kgctl.service import messages
from kgctl.service.exchange import Request
from kgctl.service.execution import HTTP_UNAVAILABLE, HttpProblem, query_timeout
from kgctl.service.spawner import WRITING, Spawner

HTTP_SERVER_ERROR = 500
SHORT_BUDGET_S = 0.25  # wall time before a computing request counts as long
BUSY_BUDGET_S = 0.05  # the same while the long lane is full
COMPUTING_CPU_S = 0.01  # CPU time within the budget that marks a request as computing
LONG_NICENESS = 10  # long requests yield the cores to short ones
QUEUE_WAIT_S = 60.0  # longest wait for a free worker before the request is answered 503
START_S = 60.0
SLOTS = 4096  # one state byte per live worker, shared with the workers
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ResponseStarted(Exception):
    """The worker was stopped after it had begun writing its response: only closing the
    connection is left."""


class Worker:
    """The owning process's end of one worker: one request at a time, one reply each."""

    def __init__(self, pid: int, sock: socket.socket, slot: int, states: mmap.mmap) -> None:
        self.pid, self.slot = pid, slot
        self._sock, self._states = sock, states
        self._handle = os.pidfd_open(pid)  # signals reach this process, never a reused pid
        self._loop = asyncio.get_running_loop()
        self.cpu_s = 0.0  # the worker's CPU time when it was last idle
        self.ready: asyncio.Future[None] = self._loop.create_future()
        self.gone: asyncio.Future[None] = self._loop.create_future()
        self._reply: asyncio.Future[bool] | None = None
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._readable)

    def ask(self, generation: int, request: Request, client_fd: int) -> asyncio.Future[bool]:
        """Hand over `request` and the connection it came on; the future says whether the
        connection may carry another request."""
        self._reply = self._loop.create_future()
        try:
            messages.send(self._sock, (generation, request), [client_fd])
        except OSError:  # it died while idle
            self._reply.set_exception(ConnectionError("the query worker stopped"))
        return self._reply

    def _readable(self) -> None:
        try:
            message = messages.receive(self._sock)
        except BlockingIOError:
            return
        except OSError:
            message = None
        if message is None:
            self._lost()
            return
        value, _ = message
        if not self.ready.done():  # the first message: started, with the CPU time that took
            self.cpu_s = value
            self.ready.set_result(None)
        elif self._reply is not None and not self._reply.done():
            keep_alive, self.cpu_s = value
            self._reply.set_result(keep_alive)

    def _lost(self) -> None:
        self._loop.remove_reader(self._sock.fileno())
        for waiting in (self.ready, self._reply):
            if waiting is not None and not waiting.done():
                waiting.set_exception(ConnectionError("the query worker stopped"))
        if not self.gone.done():
            self.gone.set_result(None)

    def writing(self) -> bool:
        """Whether the worker has begun writing the current response."""
        return self._states[self.slot] == WRITING

    def computing(self) -> bool:
        """Whether the current request has used real CPU time (True where that is unknown)."""
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
        if not self.gone.done():
            self._loop.remove_reader(self._sock.fileno())
            self.gone.set_result(None)
        self._sock.close()


class QueryWorkers:
    """`size` pooled worker processes plus at most `max_long` running long requests."""

    def __init__(self, spawner: Spawner, *, size: int, max_long: int, timeout_s: float) -> None:
        self._spawner, self._size, self._max_long = spawner, size, max_long
        self._timeout_s = timeout_s
        self._idle: list[Worker] = []
        self._waiting: deque[asyncio.Future[Worker | None]] = deque()
        self._long = 0
        self._background: set[asyncio.Future] = set()
        self._all: set[Worker] = set()
        self._free_slots = list(range(SLOTS - 1, -1, -1))

    async def start(self) -> None:
        await asyncio.gather(*(self._add() for _ in range(self._size)))

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        for worker in list(self._all):
            self._all.discard(worker)
            worker.kill()

    async def run(self, request: Request, client_fd: int, *, generation: int) -> bool:
        """Have a worker answer `request` on the connection `client_fd` within the time limit;
        whether the connection may carry another request. HttpProblem when the owning process
        must answer instead (the worker was stopped before it wrote anything), ResponseStarted
        when the worker was stopped mid-response. A request that loses its worker before it
        wrote (a view opened while the writer switched files) is tried once more."""
        try:
            return await self._run_once(request, client_fd, generation)
        except ConnectionError:
            pass
        try:
            return await self._run_once(request, client_fd, generation)
        except ConnectionError:
            raise HttpProblem(HTTP_SERVER_ERROR, "the query worker stopped (out of memory?); "
                              "narrow the query") from None

    async def _run_once(self, request: Request, client_fd: int, generation: int) -> bool:
        worker = self._idle.pop() if self._idle else await self._wait_for_worker()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        reply = worker.ask(generation, request, client_fd)
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
            keep_alive = reply.result()
        except BaseException as exc:
            wrote = worker.writing()
            self._retire(worker, replace=not long)
            if wrote and isinstance(exc, (HttpProblem, ConnectionError)):
                raise ResponseStarted() from None
            raise
        finally:
            if long:
                self._long -= 1
        if long:
            self._retire(worker, replace=False)
        else:
            self._release(worker)
        return keep_alive

    async def _wait_for_worker(self) -> Worker:
        loop = asyncio.get_running_loop()
        seat: asyncio.Future[Worker | None] = loop.create_future()
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
        ours, theirs = messages.pair()
        slot = self._free_slots.pop()
        try:
            with theirs:
                pid = await asyncio.wait_for(
                    asyncio.to_thread(self._spawner.spawn, theirs, slot), START_S)
        except BaseException:
            self._free_slots.append(slot)
            ours.close()
            raise
        worker = Worker(pid, ours, slot, self._spawner.states)
        worker.gone.add_done_callback(lambda _: self._free_slots.append(slot))
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
