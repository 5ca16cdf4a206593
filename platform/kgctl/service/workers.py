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
import heapq
import os
import resource
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path

from kgctl.service import messages
from kgctl.service.exchange import simple_response
from kgctl.service.execution import HTTP_UNAVAILABLE, HttpProblem, query_timeout
from kgctl.service.spawner import Spawner
from kgctl.service.worker_state import WorkerState, full, mark_watched, set_full

HTTP_REQUEST_TIMEOUT = 408
HTTP_SERVER_ERROR = 500
IDLE = "idle"
SPARE_DESCRIPTORS = 256
ROOM_HYSTERESIS = 64
STOPPED_S = 1.0  # a worker stopped this long by someone else is ended
STOPPED_CHECK_EVERY = 10  # ticks
RETRY_S = 1.0  # a worker that failed to start is tried again after this
EVICT_AFTER_S = 1.0  # a connection is not cut off for room before it waited this long
TICK_S = 0.01  # how often the workers' states are looked at
SHORT_BUDGET_S = 0.25  # wall time before a computing request counts as long
BUSY_BUDGET_S = 0.05  # the same while the long lane is full
COMPUTING_CPU_S = 0.01  # CPU time within the budget that marks a request as computing
LONG_NICENESS = 10  # long requests yield the cores to short ones
FREEZE_S = 1.0  # longest wait for a worker to stop before trying again later
START_S = 60.0
SLOTS = 4096
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CRASHED = HttpProblem(HTTP_SERVER_ERROR, "the query worker stopped (out of memory?); narrow "
                      "the query")
Clock = tuple[int, str, float]  # a connection, what it waits for (idle, head, body), until when
Take = Callable[[Clock, socket.socket], None]


class Worker:
    """This process's end of one worker process."""

    def __init__(self, pid: int, sock: socket.socket, state: WorkerState, slot: int,
                 pool: QueryWorkers) -> None:
        self.pid, self.slot, self.state, self._sock, self._pool = pid, slot, state, sock, pool
        self._handle = os.pidfd_open(pid)  # signals reach this process, never a reused pid
        self._loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = self._loop.create_future()
        self.connections: set[int] = set()
        self.long = self.acting = self.releasing = False
        self.stopped_since: float | None = None  # seen stopped (not by us) since then
        self.alive = True
        self.problem = CRASHED  # what its current request is answered if it ends
        # orders wait here while the worker's socket is full (a busy worker reads none)
        self._outbox: deque[tuple[tuple, socket.socket | None]] = deque()
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        while True:
            try:
                message = messages.receive(self._sock)
            except BlockingIOError:
                return
            except OSError:
                message = None
            if message is None:
                self._loop.remove_reader(self._sock.fileno())
                self._loop.remove_writer(self._sock.fileno())
                self._outbox.clear()
                self._sock.close()
                self.alive = False
                if not self.ready.done():
                    self.ready.set_exception(ConnectionError("the query worker stopped"))
                self._pool.ended(self)
                return
            value, fds = message
            if not self.ready.done():
                self.ready.set_result(None)
            else:
                self._pool.told(self, value, fds)

    def adopt(self, clock: Clock, sock: socket.socket) -> None:
        self.ask("adopt", clock, sock)
        self.connections.add(clock[0])

    def ask(self, kind: str, value, sock: socket.socket | None = None) -> None:
        """Send an order (with a connection); queued while the worker's socket is full."""
        self._outbox.append(((kind, value), sock))
        if len(self._outbox) == 1:
            self._flush()

    def _flush(self) -> None:
        while self._outbox:
            order, sock = self._outbox[0]
            try:
                if sock is None or sock.fileno() >= 0:  # a connection closed since: skipped
                    messages.send(self._sock, order, [sock.fileno()] if sock else [])
            except BlockingIOError:
                self._loop.add_writer(self._sock.fileno(), self._flush)
                return
            except OSError:  # it ended: its end moves its connections on
                self._outbox.clear()
                return
            self._outbox.popleft()
        self._loop.remove_writer(self._sock.fileno())

    def cpu_s(self) -> float:
        fields = _stat(self.pid)
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS if fields else float("inf")

    async def freeze(self) -> bool:
        """Stop the process (SIGSTOP) and wait until it is stopped; False if it ended."""
        if not self._signal(signal.SIGSTOP):
            return False
        deadline = self._loop.time() + FREEZE_S
        while self.alive and self._loop.time() < deadline:
            fields = _stat(self.pid)
            if not fields or fields[0] in "ZX":
                return False
            if fields[0] in "tT":
                return True
            await asyncio.sleep(TICK_S / 10)
        self.thaw()
        return False

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def lower_priority(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, self.pid, LONG_NICENESS)
        except OSError:  # already gone: nothing to slow down
            pass

    def kill(self, problem: HttpProblem | None = None) -> None:
        if problem is not None:
            self.problem = problem
        self._signal(signal.SIGKILL)

    def close(self) -> None:
        self.kill()
        os.close(self._handle)

    def _signal(self, signum: int) -> bool:
        try:
            signal.pidfd_send_signal(self._handle, signum)
        except (ProcessLookupError, OSError):
            return False
        return True


class QueryWorkers:
    """`size` pooled worker processes plus at most `max_long` retiring with a long request;
    `take` receives the connections whose request must be answered by this process."""

    def __init__(self, spawner: Spawner, *, size: int, max_long: int, timeout_s: float,
                 header_timeout_s: float, body_timeout_s: float, take: Take) -> None:
        self._spawner, self._size, self._max_long = spawner, size, max_long
        self._timeout_s, self._take = timeout_s, take
        self._waits = {"head": header_timeout_s, "body": body_timeout_s}
        self._all: set[Worker] = set()
        self._held: dict[int, tuple[socket.socket, Worker | None]] = {}
        self._clocks: dict[int, Clock] = {}  # the last wait each worker told of
        self._slow: list[tuple[float, int]] = []  # (deadline, connection) of HEAD/BODY waits
        self._cap = connection_cap(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
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
        for sock, _ in self._held.values():
            sock.close()
        self._held.clear()
        self._clocks.clear()

    def give_back(self, ident: int) -> None:
        """A connection this process answered on may carry more requests: to a worker."""
        self._rehome(ident)

    def drop(self, ident: int) -> None:
        sock = self._forget(ident)
        if sock is not None:
            _shut(sock)

    # room: every connection costs a descriptor here and one in a worker

    def _clock(self, clock: Clock) -> None:
        ident, waiting, deadline = clock
        if ident in self._held:
            self._clocks[ident] = clock
            if waiting != IDLE:
                heapq.heappush(self._slow, (deadline - self._waits[waiting], ident))

    def _make_room(self) -> None:
        """At the cap, end the connections slowest to send their request (408; only those
        waiting at least EVICT_AFTER_S); when none is, workers answer new connections 503
        until there is room."""
        was_full = full(self._spawner.block)
        room = self._cap - ROOM_HYSTERESIS if was_full else self._cap
        while len(self._held) >= room:
            victim = self._slowest()
            if victim is None:
                break
            sock, worker = self._held[victim]
            if worker is not None:
                worker.connections.discard(victim)
            self._forget(victim)
            _say(sock, simple_response(HTTP_REQUEST_TIMEOUT, b"error: request not received "
                                       b"in time (the server is full)\n", keep_alive=False))
            _shut(sock)
        if (len(self._held) >= room) != was_full:
            set_full(self._spawner.block, not was_full)

    def _slowest(self) -> int | None:
        """The connection that began waiting for its request first, if long enough ago."""
        while self._slow:
            started, ident = self._slow[0]
            if not self._still_slow(started, ident):
                heapq.heappop(self._slow)
            elif time.monotonic() - started < EVICT_AFTER_S:
                return None
            else:
                heapq.heappop(self._slow)
                return ident
        return None

    def _still_slow(self, started: float, ident: int) -> bool:
        clock = self._clocks.get(ident)
        return clock is not None and clock[1] != IDLE and self._held[ident][1] is not None \
            and clock[2] - self._waits[clock[1]] == started

    def _forget(self, ident: int) -> socket.socket | None:
        sock, _ = self._held.pop(ident, (None, None))
        self._clocks.pop(ident, None)
        if len(self._slow) > 4 * len(self._held) + 64:  # drop what no longer counts
            self._slow = [(s, i) for s, i in self._slow if self._still_slow(s, i)]
            heapq.heapify(self._slow)
        return sock

    # what workers say

    def told(self, worker: Worker, value, fds: list[int]) -> None:
        kind, about = value
        if kind == "opened":
            ident = about[0]
            if not fds:  # no descriptor left here: it cannot be moved or written to
                worker.ask("refuse", ident)
                return
            self._held[ident] = (socket.socket(fileno=fds[0]), worker)
            self._clock(about)
            worker.connections.add(ident)
            if worker.long or not worker.alive:  # it will not serve it again
                self._rehome(ident)
            self._make_room()
        elif kind == "waiting":
            self._clock(about)
        elif kind == "closed":
            worker.connections.discard(about)
            sock = self._forget(about)
            if sock is not None:
                sock.close()
        elif kind == "released":
            worker.releasing = False
            for clock in about:
                worker.connections.discard(clock[0])
                self._clock(clock)
                self._rehome(clock[0])
        elif kind == "take":
            ident = about[0]
            worker.connections.discard(ident)
            if ident in self._held:
                sock, _ = self._held[ident]
                self._held[ident] = (sock, None)
                self._clocks.pop(ident, None)
                self._take(about, sock)

    def ended(self, worker: Worker) -> None:
        """The worker's process is gone: answer its request, move its connections."""
        self._all.discard(worker)
        ident, _, _, writing = worker.state.busy()
        worker.state.clear()
        self._free_slots.append(worker.slot)
        if worker.long:
            self._long -= 1
        if ident in self._held and self._held[ident][1] is worker:
            sock = self._forget(ident)
            worker.connections.discard(ident)
            if not writing:
                problem = worker.problem
                _say(sock, simple_response(problem.status, f"error: {problem}\n".encode(),
                                           keep_alive=False))
            _shut(sock)
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
                self._make_room()
            except Exception:  # a fault of ours: deadlines must still be enforced
                traceback.print_exc(file=sys.stderr)
            else:
                mark_watched(self._spawner.block, time.monotonic())

    def _check_stopped(self, worker: Worker, now: float) -> None:
        """A worker stopped by someone else (SIGSTOP) for STOPPED_S is ended: its connections
        move on."""
        fields = _stat(worker.pid)
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
        if ident not in self._held:
            return
        sock, previous = self._held[ident]
        if previous is not None:
            previous.connections.discard(ident)
        seats = self._seats()
        if not seats:
            self._held[ident] = (sock, None)
            self._homeless.append(ident)
            return
        worker = min(seats, key=lambda w: (bool(w.state.busy()[0]), len(w.connections)))
        self._held[ident] = (sock, worker)
        worker.adopt(self._clocks.get(ident, (ident, IDLE, 0.0)), sock)

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


def connection_cap(descriptors: int) -> int:
    """Connections held at most with `descriptors` (the owning process's limit): the rest is
    kept for the store's files, the workers' sockets and the answers being written.

    >>> connection_cap(1024), connection_cap(20000)
    (768, 18750)
    """
    return descriptors - max(SPARE_DESCRIPTORS, descriptors // 16)


def _stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (state first); empty once gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _say(sock: socket.socket, data: bytes) -> None:
    try:
        sock.send(data)
    except OSError:
        pass


def _shut(sock: socket.socket) -> None:
    """End the connection for the client too (workers may hold descriptors of it)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
