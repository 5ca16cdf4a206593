"""The query workers' supervisor (kgctl.service.pool), with fake workers,
a fake clock and fake CPU times: which worker runs which query, when one is promoted to the
long lane, stopped for its deadline or for a full lane, and when a replacement is spawned."""

from __future__ import annotations

import random

from kgctl.service import pool as service
from kgctl.service.pool import FROZEN_S, Job, Kill, Pool, Promote, Retire, Run, Spawn, Stop

TIMEOUT_S = 2.0


def started(seats: int = 2, spares: int = 2) -> tuple[Pool, dict[str, float]]:
    """A pool whose workers w0, w1, ... are all ready at time 0; their CPU times in `cpu`."""
    cpu: dict[str, float] = {}
    pool = Pool(seats, spares, TIMEOUT_S, cpu.__getitem__)
    assert pool.start() == [Spawn()] * (seats + spares)
    for n in range(seats + spares):
        cpu[f"w{n}"] = 0.0
        assert pool.ready(f"w{n}", 0.0) == []
    return pool, cpu


def runs(actions: list) -> list:
    return [a.worker for a in actions if isinstance(a, Run)]


def test_queries_run_at_once_on_at_most_seats_workers_then_in_arrival_order():
    pool, _ = started()
    jobs = [Job(TIMEOUT_S) for _ in range(3)]
    first, second = runs(pool.submit(jobs[0], 0.0)), runs(pool.submit(jobs[1], 0.0))
    assert len(first) == len(second) == 1 and first != second
    assert pool.submit(jobs[2], 0.0) == []  # two seats: the spares do not run short queries
    assert pool.finished(first[0], 0.1) == [Run(first[0], jobs[2])]
    assert jobs[2].started == 0.1
    assert pool.finished(second[0], 0.1) == []


def test_a_query_past_its_deadline_is_stopped_with_its_worker_and_a_spare_takes_the_seat():
    pool, _ = started()
    runaway, waiting = Job(TIMEOUT_S), Job(0.5 + TIMEOUT_S)
    (worker,) = runs(pool.submit(runaway, 0.0))
    pool.submit(Job(TIMEOUT_S), 0.0)
    pool.submit(waiting, 0.5)
    assert pool.tick(1.0) == []  # not computing: no CPU time spent
    actions = pool.tick(TIMEOUT_S)
    assert actions[:2] == [Stop(worker, runaway, 503, str(service.query_timeout(TIMEOUT_S))),
                           Spawn()]
    assert isinstance(actions[2], Run) and actions[2].job is waiting
    assert pool.finished(worker, 2.1) == []  # a reply that raced the kill is not answered


def test_a_query_that_waited_past_its_deadline_is_refused_without_running():
    pool, _ = started(seats=1)
    pool.submit(Job(10.0), 0.0)  # holds the one seat (a longer deadline)
    late = Job(0.1 + TIMEOUT_S)
    assert pool.submit(late, 0.1) == []
    assert pool.tick(0.1 + TIMEOUT_S) == [
        Stop(None, late, 503, str(service.query_timeout(TIMEOUT_S)))]


def test_a_computing_query_past_the_short_budget_becomes_long_then_the_lane_fills():
    pool, cpu = started(seats=2, spares=4)
    jobs = [Job(TIMEOUT_S) for _ in range(4)]
    a, b = (runs(pool.submit(job, 0.0))[0] for job in jobs[:2])
    assert pool.submit(jobs[2], 0.0) == pool.submit(jobs[3], 0.0) == []
    assert pool.tick(0.01) == []
    assert pool.tick(service.SHORT_BUDGET_S - service.CPU_WINDOW_S) == []  # CPU times read
    cpu[a] = 0.2
    assert pool.tick(0.24) == []  # within the short budget
    actions = pool.tick(0.25)
    assert actions[:2] == [Promote(a), Spawn()]
    (c,) = runs(actions)  # a spare takes the seat and the next query
    cpu[b] = 0.3  # b computes too: promoted, the long lane (2) is now full
    actions = pool.tick(0.26)
    assert actions[:2] == [Promote(b), Spawn()]
    (d,) = runs(actions)
    pool.tick(0.27)
    cpu[c] = 0.02  # past 50 ms while the lane is full: stopped "busy"
    cpu[d] = 0.005  # not computing (waiting for a core): kept
    actions = pool.tick(0.32)
    assert actions == [Stop(c, jobs[2], 503, "server busy: 2 long queries are running; retry "
                            "later"), Spawn()]
    assert runs(pool.submit(Job(0.33 + TIMEOUT_S), 0.33))  # c's seat
    older, newer = Job(0.34 + TIMEOUT_S), Job(0.4 + TIMEOUT_S)
    assert pool.submit(older, 0.34) == pool.submit(newer, 0.4) == []  # the seats are taken
    cpu[d] = 0.1  # the lane is full: stopped "busy", and the newest waiting query runs first
    actions = pool.tick(0.41)
    assert actions[0] == Stop(d, jobs[3], 503, "server busy: 2 long queries are running; "
                              "retry later") and actions[-1].job is newer
    assert list(pool.waiting) == [older]
    assert pool.finished(a, 0.5) == [Retire(a)]  # the long lane has room again


def test_a_query_answered_before_its_cpu_window_never_has_its_cpu_time_read():
    reads: list[str] = []
    pool = Pool(1, 1, TIMEOUT_S, lambda worker: reads.append(worker) or 0.0)
    pool.start()
    pool.ready("w0", 0.0)
    pool.ready("w1", 0.0)
    (worker,) = runs(pool.submit(Job(TIMEOUT_S), 0.0))
    assert pool.tick(0.01) == [] and reads == []
    pool.finished(worker, 0.1)  # answered: its CPU time was never read
    (worker,) = runs(pool.submit(Job(0.1 + TIMEOUT_S), 0.1))
    window = service.SHORT_BUDGET_S - service.CPU_WINDOW_S  # when its window begins
    assert pool.tick(0.1 + window / 2) == [] and reads == []
    assert pool.tick(0.11 + window) == [] and reads == [worker]


def test_a_worker_that_dies_has_its_query_answered_500_and_is_replaced():
    pool, _ = started()
    job = Job(TIMEOUT_S)
    (worker,) = runs(pool.submit(job, 0.0))
    assert pool.ended(worker, 0.1) == [Stop(worker, job, *service.CRASHED), Spawn()]
    assert pool.ended(pool.idle[0], 0.1) == [Spawn()]  # an idle one: replaced
    assert pool.ended(worker, 0.2) == []  # gone already
    assert pool.starting == 2


def test_a_worker_stopped_by_someone_else_is_killed_after_a_second_and_replaced():
    frozen: set[str] = set()
    cpu: dict[str, float] = {"w0": 0.0, "w1": 0.0}
    pool = Pool(1, 1, TIMEOUT_S, cpu.__getitem__, stopped=frozen.__contains__)
    pool.start()
    pool.ready("w0", 0.0)
    pool.ready("w1", 0.0)
    job = Job(10.0)
    (worker,) = runs(pool.submit(job, 0.0))
    frozen.add(worker)
    assert pool.check(0.0) == []  # seen stopped: not yet
    frozen.discard(worker)  # thawed in time: forgiven
    assert pool.check(FROZEN_S) == []
    frozen.add(worker)
    assert pool.check(2 * FROZEN_S) == []
    assert pool.check(3 * FROZEN_S) == [Kill(worker)]
    assert pool.ended(worker, 3 * FROZEN_S + 0.01) == [Stop(worker, job, *service.CRASHED),
                                                         Spawn()]


def test_randomized_rounds_keep_the_invariants():
    """10,000 random arrivals, CPU use, replies, crashes, freezes and ticks: every job is
    answered once, never run past its deadline nor on a worker that was stopped or killed;
    seats, the long lane and the count of workers hold; the pool is pending while a job is
    unanswered."""
    rng = random.Random(29)
    seats, spares, max_long = 3, 2, 2
    cpu: dict[str, float] = {}
    frozen: set[str] = set()
    killed: list[str] = []  # the driver killed them: `ended` comes later
    pool = Pool(seats, spares, TIMEOUT_S, cpu.__getitem__, max_long, frozen.__contains__)
    pending, made, now = len(pool.start()), 0, 0.0
    running: dict[str, Job] = {}
    answered: set[int] = set()
    gone: set[str] = set()
    jobs: list[Job] = []  # kept alive: answers are told apart by id
    seen: set[type] = set()
    for _ in range(10_000):
        now += rng.choice((0.0, 0.001, 0.01, 0.05))
        for worker in sorted(running.keys() - frozen):  # in an order that hashing does not set
            cpu[worker] += rng.choice((0.0, 0.0, 0.005, 0.02))
        event = rng.random()
        if event < 0.1 and pending:
            pending, made = pending - 1, made + 1
            cpu[f"w{made}"] = 0.0
            actions = pool.ready(f"w{made}", now)
        elif event < 0.4:
            jobs.append(Job(now + TIMEOUT_S))
            actions = pool.submit(jobs[-1], now)
        elif event < 0.6 and running.keys() - frozen:
            worker = rng.choice(sorted(running.keys() - frozen))
            job = running.pop(worker)
            assert id(job) not in answered
            answered.add(id(job))  # the driver answers with the worker's reply
            actions = pool.finished(worker, now)
        elif event < 0.62 and running:
            worker = rng.choice(sorted(running))
            running.pop(worker)
            gone.add(worker)
            actions = pool.ended(worker, now)
        elif event < 0.63:
            live = sorted({*running, *pool.idle} - gone)
            if live:
                frozen.add(rng.choice(live))
            actions = []
        elif event < 0.66 and killed:
            worker = killed.pop(0)
            if worker not in gone:
                gone.add(worker)
                job = running.pop(worker, None)
                actions = pool.ended(worker, now)
                if job is not None:
                    assert Stop(worker, job, *service.CRASHED) in actions
            else:
                actions = []
        elif event < 0.7:
            actions = pool.check(now)
        else:
            actions = pool.tick(now)
        for action in actions:
            seen.add(type(action))
            if isinstance(action, Spawn):
                pending += 1
            elif isinstance(action, Run):
                assert now < action.job.deadline and action.worker not in gone
                running[action.worker] = action.job
            elif isinstance(action, Stop):
                assert id(action.job) not in answered
                answered.add(id(action.job))
                running.pop(action.worker, None)
                gone.add(action.worker)
            elif isinstance(action, Retire):
                gone.add(action.worker)
            elif isinstance(action, Kill):
                assert action.worker in frozen and action.worker not in gone
                killed.append(action.worker)
        assert len(pool.short) <= seats and len(pool.long) <= max_long
        assert len(pool.idle) + len(pool.short) + pool.starting == seats + spares
        assert pending == pool.starting
        assert pool.pending() == (len(answered) < len(jobs))  # else the driver stops ticking
    assert len(answered) + len(running) + len(pool.waiting) == len(jobs)
    assert len(answered) > len(jobs) / 2 and len(gone) > 50
    assert seen == {Run, Stop, Spawn, Promote, Retire, Kill}
