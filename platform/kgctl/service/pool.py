"""The query workers' supervisor, apart from processes, sockets and clocks: which worker runs
which request, when one is promoted to the long lane or stopped, when a replacement starts.
Tested with fake workers and a fake clock in tests/test_service_pool.py."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from kgctl.service.execution import HTTP_UNAVAILABLE, query_timeout

SHORT_BUDGET_S = 0.25  # wall time before a computing query counts as long
BUSY_BUDGET_S = 0.05  # the same while the long lane is full
COMPUTING_CPU_S = 0.01  # CPU time in the budget's last CPU_WINDOW_S that marks it computing
CPU_WINDOW_S = 0.1  # (most queries end before it begins: their CPU time is never read)
FROZEN_CHECK_S = 0.5  # how often every worker is checked for being stopped (SIGSTOP)
FROZEN_S = 1.0  # a worker stopped this long is killed and replaced
CRASHED = (500, "the query worker stopped (out of memory or nested too deeply?); narrow the query")


@dataclass(eq=False)
class Job:
    """A query: waiting for a worker until `deadline`, then running on one since `started`.
    `task` is the driver's (what to send, where to answer); the pool never looks at it."""

    deadline: float
    task: Any = None
    started: float = 0.0
    cpu_s: float | None = None  # its worker's CPU time as the window began


class Run(NamedTuple):  # send `job` to `worker`
    worker: Any
    job: Job


class Stop(NamedTuple):  # kill `worker` (None: the job never ran) and answer `job` so
    worker: Any
    job: Job
    status: int
    message: str


class Spawn(NamedTuple):  # start one worker, then tell `ready`
    pass


class Promote(NamedTuple):  # `worker` left the pool to run a long query (lower its priority)
    worker: Any


class Retire(NamedTuple):  # `worker` answered its long query: let it end
    worker: Any


class Kill(NamedTuple):  # `worker` was stopped by someone else (SIGSTOP): kill it
    worker: Any


class Pool:
    """Which worker runs which query, and when one is promoted or stopped: a pure state
    machine over the clock given to each event, the workers' CPU time (`cpu_s(worker)`) and
    whether one is stopped (`stopped(worker)`, asked in `check`).

    `seats` workers run short queries; `spares` more wait ready, so that one killed or
    promoted is replaced at once (a Spawn makes the next spare). A query past its deadline
    (counted from its arrival, waiting included) is stopped 503 with its worker. One past
    SHORT_BUDGET_S whose worker has computed becomes long: the worker leaves the pool and
    retires after answering; at most `max_long` do, and while they are that many a computing
    query is stopped 503 "busy" after BUSY_BUDGET_S. Queries wait in arrival order, but while
    the long lane is full the newest runs first: under a burst of runaways a fresh cheap query
    does not wait for every runaway ahead of it to be stopped in turn (the older ones are
    refused at their deadline, most without running).
    """

    def __init__(self, seats: int, spares: int, timeout_s: float, cpu_s, max_long: int = 2,
                 stopped=lambda worker: False):
        self.seats, self.cpu_s, self.max_long, self.stopped = seats, cpu_s, max_long, stopped
        self.timed_out = str(query_timeout(timeout_s))
        self.starting = seats + spares
        self.idle: list = []
        self.short: dict[Any, Job] = {}
        self.long: dict[Any, Job] = {}
        self.waiting: deque[Job] = deque()
        self.frozen: dict[Any, float] = {}  # worker -> first seen stopped

    def start(self) -> list:
        return [Spawn()] * self.starting

    def ready(self, worker, now: float) -> list:
        self.starting -= 1
        self.idle.append(worker)
        return self._assign(now)

    def submit(self, job: Job, now: float) -> list:
        self.waiting.append(job)
        return self._assign(now)

    def finished(self, worker, now: float) -> list:
        """`worker` answered its job."""
        if self.long.pop(worker, None) is not None:
            return [Retire(worker)]
        if self.short.pop(worker, None) is None:
            return []  # stopped already
        self.idle.append(worker)
        return self._assign(now)

    def ended(self, worker, now: float) -> list:
        """`worker`'s process is gone without being stopped (or it retired)."""
        self.frozen.pop(worker, None)
        job = self.long.pop(worker, None)
        if job is not None:
            return [Stop(worker, job, *CRASHED)]
        job = self.short.pop(worker, None)
        if job is None and worker not in self.idle:
            return []  # stopped or retired
        if job is None:
            self.idle.remove(worker)
        return ([Stop(worker, job, *CRASHED)] if job else []) + self._replace(now)

    def pending(self) -> bool:
        """Whether a query waits or runs (the driver ticks only then)."""
        return bool(self.waiting or self.short or self.long)

    def tick(self, now: float) -> list:
        actions = [Stop(None, job, HTTP_UNAVAILABLE, self.timed_out)
                   for job in self.waiting if now >= job.deadline]
        self.waiting = deque(job for job in self.waiting if now < job.deadline)
        for worker, job in list(self.long.items()):
            if now >= job.deadline:
                del self.long[worker]
                actions.append(Stop(worker, job, HTTP_UNAVAILABLE, self.timed_out))
        for worker, job in list(self.short.items()):
            full = len(self.long) >= self.max_long
            budget = BUSY_BUDGET_S if full else SHORT_BUDGET_S
            if now >= job.deadline:
                problem = self.timed_out
            elif job.cpu_s is None:
                if now - job.started >= budget - CPU_WINDOW_S:
                    job.cpu_s = self.cpu_s(worker)
                continue
            elif now - job.started >= budget and self.cpu_s(worker) - job.cpu_s >= COMPUTING_CPU_S:
                problem = f"server busy: {self.max_long} long queries are running; retry " \
                          "later" if full else None
            else:
                continue
            del self.short[worker]
            if problem is None:
                self.long[worker] = job
                actions.append(Promote(worker))
            else:
                actions.append(Stop(worker, job, HTTP_UNAVAILABLE, problem))
            actions += self._replace(now)
        return actions + self._assign(now)

    def check(self, now: float) -> list:
        """Kill the workers stopped by someone else (SIGSTOP) for FROZEN_S (the driver asks
        every FROZEN_CHECK_S, apart from the ticks: a fault here leaves deadlines enforced)."""
        kills = []
        for worker in [*self.idle, *self.short, *self.long]:
            if not self.stopped(worker):
                self.frozen.pop(worker, None)
            elif now - self.frozen.setdefault(worker, now) >= FROZEN_S:
                kills.append(Kill(worker))
        return kills

    def _replace(self, now: float) -> list:
        self.starting += 1
        return [Spawn()] + self._assign(now)

    def _assign(self, now: float) -> list:
        actions = []
        while self.waiting and self.idle and len(self.short) < self.seats:
            job = self.waiting.pop() if len(self.long) >= self.max_long \
                else self.waiting.popleft()
            if now >= job.deadline:  # not run: the next tick would refuse it
                actions.append(Stop(None, job, HTTP_UNAVAILABLE, self.timed_out))
                continue
            worker = self.idle.pop()
            job.started = now
            self.short[worker] = job
            actions.append(Run(worker, job))
        return actions
