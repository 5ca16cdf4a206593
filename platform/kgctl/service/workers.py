"""The driver of the supervisor's decisions (kgctl.service.supervision): it feeds it what the
query workers do (their messages and ends, a watchdog tick every TICK_S) and carries out what
it decides (fork, order, freeze, kill, retire, thaw, answer or close connections)."""

from __future__ import annotations

import asyncio
import itertools
import resource
import socket
import sys
import time
import traceback
from collections.abc import Callable

from kgctl.service import messages
from kgctl.service import supervision as do
from kgctl.service.exchange import simple_response
from kgctl.service.room import Clock
from kgctl.service.spawner import Spawner
from kgctl.service.supervision import Action, Busy, Supervisor
from kgctl.service.worker_handle import TICK_S, Worker
from kgctl.service.worker_state import WorkerState, mark_watched, set_full

START_S = 60.0
BACKLOG = 2048
SLOTS = 4096
Taker = Callable[[Clock, socket.socket], None]


class QueryWorkers:
    """`size` pooled worker processes plus those retiring with a long request; `take`
    receives the connections whose request must be answered by this process."""

    def __init__(self, spawner: Spawner, *, size: int, max_long: int, timeout_s: float,
                 header_timeout_s: float, body_timeout_s: float, take: Taker) -> None:
        self._spawner, self._size, self._take = spawner, size, take
        self._plan = Supervisor(self, max_long=max_long, timeout_s=timeout_s,
                                waits={"head": header_timeout_s, "body": body_timeout_s},
                                descriptors=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
                                workers=size)
        self._workers: dict[int, Worker] = {}
        self._socks: dict[int, socket.socket] = {}  # the connections held, by number
        self._keys = itertools.count(1)
        self._free_slots = list(range(SLOTS - 1, -1, -1))
        self._background: set[asyncio.Future] = set()
        self._listening = False

    async def start(self, listener: socket.socket) -> None:
        """Start the workers and a spare, then listen: no connection waits for them."""
        mark_watched(self._spawner.block, time.monotonic())
        self._start(self._watch())
        await asyncio.gather(*(self._add() for _ in range(self._size + 1)))
        listener.listen(BACKLOG)
        self._listening = True
        for key in sorted(self._workers):
            self._do(self._plan.started(key))

    async def close(self) -> None:
        self._plan.closing = True
        for task in self._background:
            task.cancel()
        for worker in list(self._workers.values()):
            worker.close()
        for sock in self._socks.values():
            sock.close()
        self._socks.clear()

    def give_back(self, ident: int) -> None:
        """A connection this process answered on may carry more requests: to a worker."""
        self._do(self._plan.give_back(ident))

    def drop(self, ident: int) -> None:
        self._do(self._plan.drop(ident))

    # what the supervisor reads (supervision.Probe)

    def busy(self, worker: int) -> Busy:
        return self._workers[worker].state.busy()

    def cpu_s(self, worker: int) -> float:
        return self._workers[worker].cpu_s()

    def stopped(self, worker: int) -> bool:
        return self._workers[worker].stopped()

    # what happens (worker_handle.Pool)

    def ready(self, worker: Worker) -> None:
        if self._listening:  # else `start` tells of it
            self._do(self._plan.started(worker.key))

    def told(self, worker: Worker, value, fds: list[int]) -> None:
        kind, about = value
        if kind == "opened" and fds:
            self._socks[about[0]] = socket.socket(fileno=fds[0])
        self._do(self._plan.told(worker.key, kind, about, has_fd=bool(fds),
                                 now=time.monotonic()))

    def ended(self, worker: Worker) -> None:
        self._workers.pop(worker.key, None)
        busy = worker.state.busy()
        worker.state.clear()
        self._free_slots.append(worker.slot)
        self._do(self._plan.ended(worker.key, busy))

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self._do(self._plan.tick(time.monotonic()))

    async def _freeze(self, key: int) -> None:
        worker, busy = self._workers.get(key), None
        try:
            if worker is not None and await worker.freeze():
                busy = worker.state.busy()
        finally:
            self._do(self._plan.frozen(key, busy))

    # what the supervisor decides

    def _do(self, actions: list[Action]) -> None:
        if self._plan.closing:  # the connections and workers are being closed
            return
        for action in actions:
            try:
                self._carry_out(action)
            except Exception:  # a fault of ours: the other actions still go
                traceback.print_exc(file=sys.stderr)

    def _carry_out(self, action: Action) -> None:
        match action:
            case do.Order(key, kind, value, connection):
                if key in self._workers:
                    self._workers[key].ask(kind, value, None if connection is None
                                           else self._socks[connection])
            case do.Answer(connection, problem):
                sock = self._socks.pop(connection)
                say(sock, simple_response(problem.status, f"error: {problem}\n".encode(),
                                          keep_alive=False))
                shut(sock)
            case do.Shut(connection):
                shut(self._socks.pop(connection))
            case do.Close(connection):
                self._socks.pop(connection).close()
            case do.Take(clock):
                self._take(clock, self._socks[clock[0]])
            case do.Freeze(key):
                self._start(self._freeze(key))
            case do.Kill(key) | do.Retire(key) | do.Thaw(key) if key not in self._workers:
                pass
            case do.Kill(key):
                self._workers[key].kill()
            case do.Retire(key):
                self._workers[key].state.retire()
                self._workers[key].lower_priority()
            case do.Thaw(key):
                self._workers[key].thaw()
            case do.Spawn(after_s):
                asyncio.get_running_loop().call_later(after_s, self._respawn)
            case do.Full(full):
                set_full(self._spawner.block, full)
            case do.Heartbeat():
                mark_watched(self._spawner.block, time.monotonic())
            case do.Fault(error):
                print(error, file=sys.stderr, end="")

    def _respawn(self) -> None:
        if not self._plan.closing:
            self._start(self._add(), on_failure=self._plan.start_failed)

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
        worker = Worker(next(self._keys), pid, ours, WorkerState(self._spawner.block, slot),
                        slot, self)
        self._workers[worker.key] = worker
        await asyncio.wait_for(worker.ready, START_S)

    def _start(self, job, on_failure: Callable[[], list[Action]] = list) -> asyncio.Future:
        """Run `job` in the background; if it fails, log it and do what `on_failure` says."""
        def finished(task: asyncio.Future) -> None:
            self._background.discard(task)
            if task.cancelled() or task.exception() is None or self._plan.closing:
                return
            traceback.print_exception(task.exception(), file=sys.stderr)
            self._do(on_failure())

        task = asyncio.ensure_future(job)
        self._background.add(task)
        task.add_done_callback(finished)
        return task


def say(sock: socket.socket, data: bytes) -> None:
    try:
        sock.send(data)
    except OSError:
        pass


def shut(sock: socket.socket) -> None:
    """End the connection for the client too (workers may hold descriptors of it)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
