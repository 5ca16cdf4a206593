"""The supervisor's decisions over the query workers, as a pure state machine: events in (a
worker started, said something, ended, was frozen; a watchdog tick with the time), actions
out. It has no process, socket or clock of its own (kgctl.service.workers carries the actions
out); docs/service.md ("How queries are stopped") says what it decides and why.
"""

from __future__ import annotations

import traceback
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kgctl.service.execution import HTTP_UNAVAILABLE, HttpProblem, query_timeout
from kgctl.service.room import IDLE, Room

STOPPED_S = 1.0  # a worker stopped this long by someone else is ended
STOPPED_CHECK_EVERY = 10  # ticks
RETRY_S = 1.0  # a worker that failed to start is tried again after this
SHORT_BUDGET_S = 0.25  # wall time before a computing request counts as long
BUSY_BUDGET_S = 0.05  # the same while the long lane is full
COMPUTING_CPU_S = 0.01  # CPU time within the budget that marks a request as computing
HTTP_REQUEST_TIMEOUT = 408
CRASHED = HttpProblem(500, "the query worker stopped (out of memory?); narrow the query")
FULL = HttpProblem(HTTP_REQUEST_TIMEOUT, "request not received in time (the server is full)")
# connection (0: idle), started, CPU time then, writing, awaited since (its deadline counts from it)
Busy = tuple[int, float, float, bool, float]


class Probe(Protocol):
    """What the driver reads of a worker (its shared state, /proc)."""

    def busy(self, worker: int) -> Busy: ...

    def cpu_s(self, worker: int) -> float: ...

    def stopped(self, worker: int) -> bool: ...


# the actions, carried out by the driver
Spawn = namedtuple("Spawn", "after_s", defaults=(0.0,))
Order = namedtuple("Order", "worker kind value connection", defaults=(None,))  # with the
# descriptor of `connection` if one
Freeze = namedtuple("Freeze", "worker")  # then tell `frozen` what it is doing
Kill = namedtuple("Kill", "worker")
Retire = namedtuple("Retire", "worker")  # its retire flag, a lower CPU priority
Thaw = namedtuple("Thaw", "worker")
Answer = namedtuple("Answer", "connection problem")  # a last answer, then end the connection
Shut = namedtuple("Shut", "connection")  # end the connection for the client too
Close = namedtuple("Close", "connection")  # the worker closed it: close this process's copy
Take = namedtuple("Take", "clock")  # a write: this process reads and answers it
Full = namedtuple("Full", "full")  # workers answer new connections 503 while full
Heartbeat = namedtuple("Heartbeat", "")  # a watchdog round went through (/healthz reads it)
Fault = namedtuple("Fault", "error")  # a step of a round failed (the others went on)
Action = (Spawn | Order | Freeze | Kill | Retire | Thaw | Answer | Shut | Close | Take | Full
          | Heartbeat | Fault)


@dataclass(eq=False)
class Seat:
    """The supervisor's picture of one worker."""

    connections: set[int] = field(default_factory=set)
    long: bool = False
    releasing: bool = False
    spare: bool = False  # started, not yet told to accept connections
    killed: bool = False  # its end is on the way
    stopped_since: float | None = None  # seen stopped (not by us) since then
    problem: HttpProblem = CRASHED  # what its request is answered if it ends


class Supervisor:
    def __init__(self, probe: Probe, *, max_long: int, timeout_s: float,
                 waits: dict[str, float], descriptors: int, workers: int = 0) -> None:
        self._probe, self._max_long, self._timeout_s = probe, max_long, timeout_s
        self._workers = workers  # how many take connections before one is kept spare (0: none)
        self.seats: dict[int, Seat] = {}
        self.room = Room(waits, descriptors)
        self.homeless: list[int] = []  # connections waiting for a worker to start
        self.long = 0  # long requests, counting those whose worker is being frozen
        self.acting: dict[int, tuple[int, float, HttpProblem | None]] = {}
        self.rounds = 0
        self.closing = False

    # workers

    def started(self, worker: int) -> list[Action]:
        spare = 0 < self._workers <= len(self._pool()) and not self._spares()
        self.seats[worker] = Seat(spare=spare)
        if spare:
            return []
        actions: list[Action] = [Order(worker, "accept", None)]
        homeless, self.homeless = self.homeless, []
        for ident in homeless:
            self._rehome(ident, actions)
        return actions

    def start_failed(self) -> list[Action]:
        return [] if self.closing else [Spawn(RETRY_S)]

    def ended(self, worker: int, busy: Busy) -> list[Action]:
        """The worker's process is gone (`busy`: what it was doing): answer its request,
        move its connections, replace it."""
        seat = self.seats.pop(worker, None)
        if seat is None:  # it never started: its start failed
            return []
        actions: list[Action] = []
        ident, _, _, writing, _ = busy
        if seat.long:
            self.long -= 1
        if self.room.held.get(ident) == worker:
            seat.connections.discard(ident)
            self.room.forget(ident)
            actions.append(Shut(ident) if writing else Answer(ident, seat.problem))
        if not seat.long and not seat.spare:
            self._seat_spare(actions)
        for other in self._served_first(seat.connections):
            self._rehome(other, actions)
        if not seat.long and not self.closing:
            actions.append(Spawn())
        return actions

    def told(self, worker: int, kind: str, about, *, has_fd: bool = True,
             now: float = 0.0) -> list[Action]:
        """A worker's message: opened (clock; `has_fd`: its descriptor came along), waiting
        (clock), closed (connection), released (clocks), take (clock)."""
        seat, actions = self.seats.get(worker), []
        if seat is None:
            return actions
        if kind == "opened":
            ident = about[0]
            if not has_fd:  # no descriptor left here: it cannot be moved or written to
                return [Order(worker, "refuse", ident)]
            self.room.hold(ident, worker, about)
            seat.connections.add(ident)
            if seat.long or seat.killed:  # it will not serve it again
                self._rehome(ident, actions)
            self._make_room(now, actions)
        elif kind == "waiting":
            self.room.clock(about)
        elif kind == "closed":
            seat.connections.discard(about)
            if self.room.forget(about):
                actions.append(Close(about))
        elif kind == "released":
            seat.releasing = False
            for clock in about:
                seat.connections.discard(clock[0])
                self.room.clock(clock)
                self._rehome(clock[0], actions)
        elif kind == "take":
            ident = about[0]
            seat.connections.discard(ident)
            if ident in self.room.held:
                self.room.held[ident] = None
                self.room.clocks.pop(ident, None)
                actions.append(Take(about))
        return actions

    def give_back(self, ident: int) -> list[Action]:
        """A connection this process answered a write on goes on: to a worker."""
        actions: list[Action] = []
        self._rehome(ident, actions)
        return actions

    def drop(self, ident: int) -> list[Action]:
        return [Shut(ident)] if self.room.forget(ident) else []

    # watching

    def tick(self, now: float) -> list[Action]:
        """A watchdog round: deadlines, long requests, stopped workers, balance, room. A step
        that fails is reported and the others go on; a round without fault beats the heart."""
        self.rounds += 1
        actions: list[Action] = []
        steps: list[Callable[[], None]] = []
        for worker in list(self.seats):
            steps.append(lambda w=worker: self._check(w, now, actions))
            if self.rounds % STOPPED_CHECK_EVERY == 0:
                steps.append(lambda w=worker: self._check_stopped(w, now, actions))
        steps += [lambda: self._balance(actions), lambda: self._make_room(now, actions)]
        faults = []
        for step in steps:
            try:
                step()
            except Exception:  # a fault of ours: deadlines must still be enforced
                faults.append(Fault(traceback.format_exc()))
        return actions + (faults or [Heartbeat()])

    def _check(self, worker: int, now: float, actions: list[Action]) -> None:
        seat = self.seats.get(worker)
        if seat is None or seat.killed or worker in self.acting:
            return
        ident, started, cpu_s, _, since = self._probe.busy(worker)
        if not ident:
            return
        elapsed = now - started
        if now - since >= self._timeout_s:
            self._act(worker, ident, started, query_timeout(self._timeout_s), actions)
        elif seat.long:
            return
        elif elapsed >= (SHORT_BUDGET_S if self.long < self._max_long else BUSY_BUDGET_S) \
                and self._probe.cpu_s(worker) - cpu_s >= COMPUTING_CPU_S:
            if self.long >= self._max_long:
                self._act(worker, ident, started, HttpProblem(
                    HTTP_UNAVAILABLE, f"server busy: {self._max_long} long queries are "
                    "running; retry later"), actions)
            else:
                self.long += 1  # taken now: the lane is full for the next decision
                self._act(worker, ident, started, None, actions)

    def _act(self, worker: int, ident: int, started: float, problem: HttpProblem | None,
             actions: list[Action]) -> None:
        self.acting[worker] = (ident, started, problem)
        actions.append(Freeze(worker))

    def frozen(self, worker: int, busy: Busy | None) -> list[Action]:
        """The worker is frozen (`busy`: what it is doing), or could not be (None): kill it
        with the problem decided, or (None) make its request long, if it is still on that
        request; else let it go on."""
        ident, started, problem = self.acting.pop(worker)
        seat, actions = self.seats.get(worker), []
        confirmed = seat is not None and busy is not None and busy[:2] == (ident, started)
        if problem is None and not confirmed:
            self.long -= 1
        if seat is None or busy is None:
            return actions
        if not confirmed:
            return [Thaw(worker)]
        if problem is not None:
            seat.problem, seat.killed = problem, True
            return [Kill(worker)]
        seat.long = True
        self.room.clock((ident, IDLE, 0.0))  # its request came whole: no wait is running
        actions.append(Retire(worker))
        self._seat_spare(actions)
        for other in self._served_first(seat.connections - {ident}):
            self._rehome(other, actions)
        return actions + [Thaw(worker), Spawn()]  # its seat in the pool goes to a new worker

    def _check_stopped(self, worker: int, now: float, actions: list[Action]) -> None:
        seat = self.seats.get(worker)
        if seat is None or seat.killed or worker in self.acting:
            return
        if not self._probe.stopped(worker):
            seat.stopped_since = None
        elif seat.stopped_since is None:
            seat.stopped_since = now
        elif now - seat.stopped_since >= STOPPED_S:
            seat.killed = True
            actions.append(Kill(worker))

    def _balance(self, actions: list[Action]) -> None:
        """Ask the worker with the most connections to give some to the one with the least
        (the kernel hands new connections to whichever free worker wakes first)."""
        pool = self._pool()
        if len(pool) < 2:
            return
        most = max(pool, key=lambda w: len(self.seats[w].connections))
        least = min(len(self.seats[w].connections) for w in pool)
        surplus = (len(self.seats[most].connections) - least) // 2
        if surplus and not self.seats[most].releasing:
            self.seats[most].releasing = True
            actions.append(Order(most, "release", surplus))

    def _make_room(self, now: float, actions: list[Action]) -> None:
        was_full = self.room.full
        for victim, worker in self.room.crowded(now):
            if worker in self.seats:
                self.seats[worker].connections.discard(victim)
            actions.append(Answer(victim, FULL))
        if self.room.full != was_full:
            actions.append(Full(self.room.full))

    # seats

    def _rehome(self, ident: int, actions: list[Action]) -> None:
        if ident not in self.room.held:
            return
        previous = self.room.held[ident]
        if previous in self.seats:
            self.seats[previous].connections.discard(ident)
        pool = self._pool()
        if not pool:
            self.room.held[ident] = None
            self.homeless.append(ident)
            return
        worker = min(pool, key=lambda w: (bool(self._probe.busy(w)[0]),
                                          len(self.seats[w].connections)))
        self.room.held[ident] = worker
        self.seats[worker].connections.add(ident)
        actions.append(Order(worker, "adopt", self.room.clocks.get(ident, (ident, IDLE, 0.0)),
                             ident))

    def _served_first(self, connections: set[int]) -> list[int]:
        """Connections to move, those already served first: a worker begins the request of
        the first it adopts, so a client is not kept behind a burst of fresh connections."""
        return sorted(connections, key=lambda c: (self.room.clocks.get(c, (c, IDLE))[1] != IDLE,
                                                  c))

    def _pool(self) -> list[int]:
        """The workers that take connections."""
        return [w for w, seat in self.seats.items()
                if not (seat.long or seat.killed or seat.spare)]

    def _spares(self) -> list[int]:
        return [w for w, seat in self.seats.items() if seat.spare and not seat.killed]

    def _seat_spare(self, actions: list[Action]) -> None:
        """A seat in the pool was given up: the spare takes it (a Spawn replaces the spare)."""
        for worker in self._spares()[:1]:
            self.seats[worker].spare = False
            actions.append(Order(worker, "accept", None))
