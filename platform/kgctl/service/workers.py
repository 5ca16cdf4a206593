"""Query worker processes that answer HTTP themselves and can really be stopped.

Workers accept the connections and answer reads in their own process, over a read-only view
of the store (kgctl.service.evaluator); this process keeps the only writer, a descriptor of
every connection, and watch over the workers through their shared state. A request that
passes its deadline is killed with its process, so it stops using CPU at once; this process
answers it 503 (unless the worker had begun its response), gives the worker's other
connections to other workers (nothing of them was read) and starts a fresh worker.

A burst of runaway queries must not starve cheap ones. Every request first gets a short
budget; when it is spent, a request that has really computed (CPU time, not time spent
waiting for a core) becomes *long*: its worker leaves the pool (a new one takes its seat, and
its other connections move), runs at a lower CPU priority, and retires after answering. Only
``max_long`` long requests run at once; past that a computing request is stopped (503) at the
end of a shorter budget, so a burst drains quickly and cheap requests keep finding a worker
and a core. Before acting on a worker this process freezes it (SIGSTOP), so what it reads of
the worker's state is what the worker is doing.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import sys
import time
import traceback
from collections.abc import Callable

from kgctl.service import messages
from kgctl.service.exchange import simple_response
from kgctl.service.execution import HTTP_UNAVAILABLE, HttpProblem, query_timeout
from kgctl.service.room import IDLE, Room, say, shut
from kgctl.service.spawner import Spawner
from kgctl.service.worker_handle import TICK_S, Clock, Worker, stat
from kgctl.service.worker_state import WorkerState, mark_watched

STOPPED_S = 1.0  # a worker stopped this long by someone else is ended
STOPPED_CHECK_EVERY = 10  # ticks
RETRY_S = 1.0  # a worker that failed to start is tried again after this
SHORT_BUDGET_S = 0.25  # wall time before a computing request counts as long
BUSY_BUDGET_S = 0.05  # the same while the long lane is full
COMPUTING_CPU_S = 0.01  # CPU time within the budget that marks a request as computing
START_S = 60.0
SLOTS = 4096
Take = Callable[[Clock, socket.socket], None]


class QueryWorkers:
    """`size` pooled worker processes plus at most `max_long` retiring with a long request;
    `take` receives the connections whose request must be answered by this process."""

    def __init__(self, spawner: Spawner, *, size: int, max_long: int, timeout_s: float,
                 header_timeout_s: float, body_timeout_s: float, take: Take) -> None:
        self._spawner, self._size, self._max_long = spawner, size, max_long
        self._timeout_s, self._take = timeout_s, take
        self._all: set[Worker] = set()
        self._room = Room(spawner.block, {"head": header_timeout_s, "body": body_timeout_s},
                          resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        self._homeless: list[int] = []  # connections waiting for a worker to start
        self._long = 0
        self._free_slots = list(range(SLOTS - 1, -1, -1))
        self._background: set[asyncio.Future] = set()
        self._watching: asyncio.Future | None = None
        self._closing = False

    async def start(self) -> None:
        mark_watched(self._spawner.block, time.monotonic())
        await asyncio.gather(*(self._add() for _ in range(self._size)))
        self._watching = asyncio.ensure_future(self._watch())
        self._background.add(self._watching)
        self._watching.add_done_callback(self._finished)

    async def close(self) -> None:
        self._closing = True
        for task in self._background:
            task.cancel()
        for worker in list(self._all):
            worker.close()
        self._room.close()

    def give_back(self, ident: int) -> None:
        """A connection this process answered on may carry more requests: to a worker."""
        self._rehome(ident)

    def drop(self, ident: int) -> None:
        sock = self._room.forget(ident)
        if sock is not None:
            shut(sock)

    # what workers say

    def told(self, worker: Worker, value, fds: list[int]) -> None:
        kind, about = value
        if kind == "opened":
            ident = about[0]
            if not fds:  # no descriptor left here: it cannot be moved or written to
                worker.ask("refuse", ident)
                return
            self._room.held[ident] = (socket.socket(fileno=fds[0]), worker)
            self._room.clock(about)
            worker.connections.add(ident)
            if worker.long or not worker.alive:  # it will not serve it again
                self._rehome(ident)
            self._room.make_room()
        elif kind == "waiting":
            self._room.clock(about)
        elif kind == "closed":
            worker.connections.discard(about)
            sock = self._room.forget(about)
            if sock is not None:
                sock.close()
        elif kind == "released":
            worker.releasing = False
            for clock in about:
                worker.connections.discard(clock[0])
                self._room.clock(clock)
                self._rehome(clock[0])
        elif kind == "take":
            ident = about[0]
            worker.connections.discard(ident)
            if ident in self._room.held:
                sock, _ = self._room.held[ident]
                self._room.held[ident] = (sock, None)
                self._room.clocks.pop(ident, None)
                self._take(about, sock)

    def ended(self, worker: Worker) -> None:
        """The worker's process is gone: answer its request, move its connections."""
        self._all.discard(worker)
        ident, _, _, writing = worker.state.busy()
        worker.state.clear()
        self._free_slots.append(worker.slot)
        if worker.long:
            self._long -= 1
        if ident in self._room.held and self._room.held[ident][1] is worker:
            sock = self._room.forget(ident)
            worker.connections.discard(ident)
            if not writing:
                problem = worker.problem
                say(sock, simple_response(problem.status, f"error: {problem}\n".encode(),
                                           keep_alive=False))
            shut(sock)
        for other in list(worker.connections):
            self._rehome(other)
        if not worker.long and not self._closing:
            self._start(self._add())

    # watching

    async def _watch(self) -> None:
        """Every tick: deadlines, long requests, balance, room; a round that fails is logged
        and the next goes on (the heartbeat, which /healthz reads, only after a good one)."""
        rounds = 0
        while True:
            await asyncio.sleep(TICK_S)
            rounds += 1
            try:
                now = time.monotonic()
                for worker in list(self._all):
                    if worker.alive and not worker.acting and worker.ready.done():
                        await self._check(worker, now)
                        if rounds % STOPPED_CHECK_EVERY == 0:
                            self._check_stopped(worker, now)
                self._balance()
                self._room.make_room()
            except Exception:  # a fault of ours: deadlines must still be enforced
                traceback.print_exc(file=sys.stderr)
            else:
                mark_watched(self._spawner.block, time.monotonic())

    def _check_stopped(self, worker: Worker, now: float) -> None:
        """A worker stopped by someone else (SIGSTOP) for STOPPED_S is ended: its connections
        move on."""
        fields = stat(worker.pid)
        if not fields or fields[0] not in "tT":
            worker.stopped_since = None
        elif worker.stopped_since is None:
            worker.stopped_since = now
        elif now - worker.stopped_since >= STOPPED_S:
            worker.kill()

    def _balance(self) -> None:
        """Ask the worker with the most connections to give some to the one with the least
        (the kernel hands new connections to whichever free worker wakes first)."""
        seats = self._seats()
        if len(seats) < 2:
            return
        most = max(seats, key=lambda w: len(w.connections))
        least = min(len(w.connections) for w in seats)
        surplus = (len(most.connections) - least) // 2
        if surplus and not most.releasing:
            most.releasing = True
            most.ask("release", surplus)

    async def _check(self, worker: Worker, now: float) -> None:
        ident, started, cpu_s, _ = worker.state.busy()
        if not ident:
            return
        elapsed = now - started
        if elapsed >= self._timeout_s:
            await self._act(worker, ident, started, query_timeout(self._timeout_s))
        elif worker.long:
            return
        elif elapsed >= (SHORT_BUDGET_S if self._long < self._max_long else BUSY_BUDGET_S) \
                and worker.cpu_s() - cpu_s >= COMPUTING_CPU_S:
            if self._long >= self._max_long:
                await self._act(worker, ident, started, HttpProblem(
                    HTTP_UNAVAILABLE, f"server busy: {self._max_long} long queries are "
                    "running; retry later"))
            else:
                await self._act(worker, ident, started, None)

    async def _act(self, worker: Worker, ident: int, started: float,
                   problem: HttpProblem | None) -> None:
        """Kill the worker with `problem`, or (None) make its request long; only if it is
        still on that request once frozen."""
        worker.acting = True
        try:
            if not await worker.freeze():
                return
            if worker.state.busy()[:2] != (ident, started):
                worker.thaw()
                return
            if problem is not None:
                worker.kill(problem)
                return
            worker.state.retire()
            worker.long, self._long = True, self._long + 1
            for other in list(worker.connections - {ident}):
                self._rehome(other)
            worker.lower_priority()
            worker.thaw()
            self._start(self._add())  # its seat in the pool goes to a new worker
        finally:
            worker.acting = False

    # seats

    def _rehome(self, ident: int) -> None:
        if ident not in self._room.held:
            return
        sock, previous = self._room.held[ident]
        if previous is not None:
            previous.connections.discard(ident)
        seats = self._seats()
        if not seats:
            self._room.held[ident] = (sock, None)
            self._homeless.append(ident)
            return
        worker = min(seats, key=lambda w: (bool(w.state.busy()[0]), len(w.connections)))
        self._room.held[ident] = (sock, worker)
        worker.adopt(self._room.clocks.get(ident, (ident, IDLE, 0.0)), sock)

    def _seats(self) -> list[Worker]:
        """The workers that take connections."""
        return [w for w in self._all if w.alive and not w.long and w.ready.done()]

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
        worker = Worker(pid, ours, WorkerState(self._spawner.block, slot), slot, self)
        self._all.add(worker)
        await asyncio.wait_for(worker.ready, START_S)
        homeless, self._homeless = self._homeless, []
        for ident in homeless:
            self._rehome(ident)

    def _start(self, job) -> None:
        task = asyncio.ensure_future(job)
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future) -> None:
        """A background job ended: a failed one is logged; a failed start is tried again."""
        self._background.discard(task)
        if task.cancelled() or task.exception() is None or self._closing:
            return
        traceback.print_exception(task.exception(), file=sys.stderr)
        if task is not self._watching:
            asyncio.get_running_loop().call_later(RETRY_S, self._start, self._add())


