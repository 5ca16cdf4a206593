"""The supervisor's decisions (kgctl.service.supervision) driven with fake workers and a fake
clock: deadlines, long requests, stopped workers, respawns, connection room, and 10,000
randomized rounds of a world whose workers act between the supervisor's steps."""

from __future__ import annotations

import random
from collections import deque

import pytest

from kgctl.service.room import IDLE, Room
from kgctl.service.supervision import (
    Answer,
    Close,
    Fault,
    Freeze,
    Full,
    Heartbeat,
    Kill,
    Order,
    Retire,
    Shut,
    Spawn,
    Supervisor,
    Take,
    Thaw,
)

WAITS = {"head": 10.0, "body": 30.0}
TIMEOUT_S = 2.0
IDLE_BUSY = (0, 0.0, 0.0, False, 0.0)


class FakeWorkers:
    """What the supervisor reads of the workers, set by the test."""

    def __init__(self) -> None:
        self.busy_of: dict[int, tuple] = {}
        self.cpu: dict[int, float] = {}
        self.stopped_ones: set[int] = set()

    def busy(self, worker: int) -> tuple:
        return self.busy_of.get(worker, IDLE_BUSY)

    def cpu_s(self, worker: int) -> float:
        return self.cpu.get(worker, 0.0)

    def stopped(self, worker: int) -> bool:
        return worker in self.stopped_ones


def supervisor(fake: FakeWorkers, workers: int = 2, *, max_long: int = 2,
               descriptors: int = 1024) -> Supervisor:
    plan = Supervisor(fake, max_long=max_long, timeout_s=TIMEOUT_S, waits=WAITS,
                      descriptors=descriptors)
    for key in range(1, workers + 1):
        assert plan.started(key) == [Order(key, "accept", None)]
    return plan


def kinds(actions: list) -> list:
    return [type(a) for a in actions]


def test_a_request_past_its_deadline_is_killed_and_its_connections_move_with_their_clocks():
    fake = FakeWorkers()
    plan = supervisor(fake)
    plan.told(1, "opened", (10, "head", 10.0))
    plan.told(1, "opened", (11, "head", 10.0))
    plan.told(1, "waiting", (11, "body", 42.0))  # its head came; its body is awaited
    plan.told(2, "opened", (12, IDLE, 0.0))
    fake.busy_of[1] = (10, 0.0, 0.0, False, 0.0)
    assert plan.tick(1.99) == [Heartbeat()]
    assert plan.tick(2.0) == [Freeze(1), Heartbeat()]
    assert plan.tick(2.01) == [Heartbeat()]  # one act at a time
    assert plan.frozen(1, fake.busy(1)) == [Kill(1)]
    assert plan.tick(2.02) == [Heartbeat()]  # its end is on the way: not acted on again
    assert plan.told(1, "opened", (13, IDLE, 0.0)) == [Order(2, "adopt", (13, IDLE, 0.0), 13)]
    answer, adopt, spawn = plan.ended(1, fake.busy(1))
    assert answer.connection == 10 and answer.problem.status == 503
    assert "timed out" in str(answer.problem)
    assert adopt == Order(2, "adopt", (11, "body", 42.0), 11)  # its deadline goes with it
    assert spawn == Spawn()


def test_a_decision_follows_the_request_not_the_worker():
    fake = FakeWorkers()
    plan = supervisor(fake)
    for ident in (10, 12):
        plan.told(1, "opened", (ident, "head", 10.0))
    fake.busy_of[1] = (10, 0.0, 0.0, False, 0.0)
    assert Freeze(1) in plan.tick(2.0)
    fake.busy_of[1] = (12, 1.99, 0.0, False, 1.99)  # it answered 10 before it stopped
    assert plan.frozen(1, fake.busy(1)) == [Thaw(1)]
    assert Freeze(1) not in plan.tick(3.98)
    assert Freeze(1) in plan.tick(3.99)
    # a request about to become long that ends before the freeze gives its lane back
    fake.busy_of[2], fake.cpu[2] = (20, 5.0, 1.0, False, 5.0), 2.0
    plan.told(2, "opened", (20, "head", 10.0))
    assert Freeze(2) in plan.tick(5.3) and plan.long == 1
    assert plan.frozen(2, IDLE_BUSY) == [Thaw(2)] and plan.long == 0


def test_a_computing_request_becomes_long_its_worker_retires_and_serves_nothing_else():
    fake = FakeWorkers()
    plan = supervisor(fake, max_long=1)
    for ident in (10, 11, 12):
        plan.told(1, "opened", (ident, "head", 10.0))
    fake.busy_of[1], fake.cpu[1] = (10, 0.0, 0.5, False, 0.0), 0.505
    assert Freeze(1) not in plan.tick(0.3)  # waiting for a core is not computing
    fake.cpu[1] = 0.6
    assert Freeze(1) in plan.tick(0.3)
    actions = plan.frozen(1, fake.busy(1))
    assert actions == [Retire(1), Order(2, "adopt", (11, "head", 10.0), 11),
                       Order(2, "adopt", (12, "head", 10.0), 12), Thaw(1), Spawn()]
    assert plan.long == 1
    assert plan.started(3) == [Order(3, "accept", None)]
    assert plan.told(1, "opened", (13, "head", 10.0)) == [
        Order(3, "adopt", (13, "head", 10.0), 13)]  # accepted just before it retired
    # the lane is full: another computing request is stopped at the shorter budget
    fake.busy_of[2], fake.cpu[2] = (11, 1.0, 0.0, False, 1.0), 0.02
    assert Freeze(2) not in plan.tick(1.04)
    assert Freeze(2) in plan.tick(1.05)
    assert plan.frozen(2, fake.busy(2)) == [Kill(2)]
    answer, *rest = plan.ended(2, fake.busy(2))
    assert answer.connection == 11 and "server busy" in str(answer.problem)
    assert Spawn() in rest
    # the long one ends: its seat was already given away, the lane frees, and the connection
    # of its request (answered) goes on with no wait running
    assert plan.ended(1, IDLE_BUSY) == [Order(3, "adopt", (10, IDLE, 0.0), 10)]
    assert plan.long == 0


def test_a_request_that_took_its_connection_answered_a_writing_worker_is_shut():
    fake = FakeWorkers()
    plan = supervisor(fake)
    plan.told(1, "opened", (10, "head", 10.0))
    assert plan.ended(1, (10, 0.0, 0.0, True, 0.0)) == [Shut(10), Spawn()]


def test_a_worker_stopped_by_someone_else_is_killed_after_a_second():
    fake = FakeWorkers()
    plan = supervisor(fake)
    fake.stopped_ones.add(1)
    killed_at, now = None, 0.0
    while killed_at is None:
        now = round(now + 0.01, 2)
        if Kill(1) in plan.tick(now):
            killed_at = now
    assert 1.0 <= killed_at - 0.1 <= 1.11
    assert Kill(2) not in plan.tick(now + 5)


def test_workers_are_replaced_and_a_failed_start_is_tried_again():
    fake = FakeWorkers()
    plan = supervisor(fake, workers=1)
    plan.told(1, "opened", (10, IDLE, 0.0))
    assert plan.ended(1, IDLE_BUSY) == [Spawn()]
    assert plan.homeless == [10]  # no worker to take it yet
    assert plan.start_failed() == [Spawn(1.0)]
    assert plan.started(2) == [Order(2, "accept", None), Order(2, "adopt", (10, IDLE, 0.0), 10)]
    assert plan.ended(99, IDLE_BUSY) == []  # one that never started
    plan.closing = True
    assert plan.ended(2, IDLE_BUSY) == [] and plan.start_failed() == []


def test_a_write_is_taken_with_its_clock_and_given_back():
    fake = FakeWorkers()
    plan = supervisor(fake)
    plan.told(1, "opened", (10, "body", 25.0))
    assert plan.told(1, "take", (10, "body", 25.0)) == [Take((10, "body", 25.0))]
    assert plan.tick(30.0)[-1] == Heartbeat()  # not this watchdog's to cut off
    (order,) = plan.give_back(10)
    assert order.kind == "adopt" and order.value == (10, IDLE, 0.0)
    assert plan.drop(10) == [Shut(10)] and plan.drop(10) == []
    plan.told(2, "opened", (11, IDLE, 0.0))
    assert plan.told(2, "closed", 11) == [Close(11)]
    assert plan.told(2, "opened", (12, IDLE, 0.0), has_fd=False) == [Order(2, "refuse", 12)]


def test_balance_asks_the_busiest_worker_to_release_once_at_a_time():
    fake = FakeWorkers()
    plan = supervisor(fake)
    for ident in range(10, 20):
        plan.told(1, "opened", (ident, IDLE, 0.0))
    assert plan.tick(0.01) == [Order(1, "release", 5), Heartbeat()]
    assert plan.tick(0.02) == [Heartbeat()]
    actions = plan.told(1, "released", [(ident, "head", 9.0) for ident in range(10, 15)])
    assert actions == [Order(2, "adopt", (ident, "head", 9.0), ident) for ident in range(10, 15)]


def test_connections_are_kept_under_the_descriptor_cap_slowest_first():
    fake = FakeWorkers()
    plan = supervisor(fake, descriptors=1024)  # cap 768, and 704 once full
    cap = plan.room.cap
    actions = []
    for ident in range(1, cap + 101):  # the first half idle, then slow ones, 1 ms apart
        now = ident * 0.001
        clock = (ident, IDLE, 0.0) if ident <= cap // 2 else (ident, "head", now + 10.0)
        actions += plan.told(1 + ident % 2, "opened", clock, now=now)
    assert Full(True) in actions and not any(isinstance(a, Answer) for a in actions)
    actions = plan.tick(1.7)
    cut = [a.connection for a in actions if isinstance(a, Answer)]
    assert all(a.problem.status == 408 for a in actions if isinstance(a, Answer))
    assert cut == list(range(cap // 2 + 1, cap // 2 + 1 + len(cut)))  # longest waiting first
    assert len(plan.room.held) == cap - 64 - 1 and Full(False) in actions
    assert len(plan.seats[1].connections) + len(plan.seats[2].connections) == cap - 65


def test_a_failing_step_does_not_stop_deadline_enforcement(monkeypatch: pytest.MonkeyPatch):
    fake = FakeWorkers()
    plan = supervisor(fake, workers=3)

    def broken(*args) -> None:
        raise RuntimeError("a fault in a step")

    monkeypatch.setattr(Room, "crowded", broken)
    original = fake.busy
    fake.busy = lambda w: broken() if w == 1 else original(w)  # one worker cannot be read
    fake.busy_of[2] = (10, 0.0, 0.0, False, 0.0)
    for now in (2.0, 2.01):
        actions = plan.tick(now)
        assert Heartbeat() not in actions and sum(isinstance(a, Fault) for a in actions) == 2
    assert kinds(plan.tick(2.0)).count(Freeze) == 0  # already acting on it
    assert plan.frozen(2, (10, 0.0, 0.0, False, 0.0)) == [Kill(2)]


def test_a_deadline_counts_from_arrival_and_the_budgets_from_the_start():
    fake = FakeWorkers()
    plan = supervisor(fake)
    plan.told(1, "opened", (10, "head", 10.0))
    fake.busy_of[1], fake.cpu[1] = (10, 1.5, 0.0, False, 0.2), 0.5  # it waited 1.3 s
    assert Freeze(1) not in plan.tick(1.7)  # computing, but within its short budget
    assert plan.tick(2.2) == [Freeze(1), Heartbeat()] and plan.long == 0
    (kill,) = plan.frozen(1, fake.busy(1))
    answer, _ = plan.ended(1, fake.busy(1))
    assert kill == Kill(1) and "timed out" in str(answer.problem)


def test_a_spare_takes_a_seat_given_up_at_once_and_is_replaced():
    fake = FakeWorkers()
    plan = Supervisor(fake, max_long=1, timeout_s=TIMEOUT_S, waits=WAITS, descriptors=1024,
                      workers=2)
    assert plan.started(1) == [Order(1, "accept", None)]
    assert plan.started(2) == [Order(2, "accept", None)]
    assert plan.started(3) == []  # the spare: no connection, no accepting
    for ident in (10, 11):
        plan.told(1, "opened", (ident, "head", 10.0))
    fake.busy_of[1] = (10, 0.0, 0.0, False, 0.0)
    fake.busy_of[2] = (20, 0.0, 0.0, False, 0.0)
    assert Freeze(1) in plan.tick(2.0) and plan.frozen(1, fake.busy(1)) == [Kill(1)]
    assert plan.told(1, "opened", (12, "head", 10.0)) == [
        Order(2, "adopt", (12, "head", 10.0), 12)]  # not to the spare, not yet told
    _, accept, adopt, spawn = plan.ended(1, fake.busy(1))
    assert (accept, adopt, spawn) == (Order(3, "accept", None),
                                      Order(3, "adopt", (11, "head", 10.0), 11), Spawn())
    assert plan.started(4) == []  # the next spare
    # a request that becomes long gives its seat to the spare too
    fake.busy_of[3], fake.cpu[3] = (11, 2.0, 0.0, False, 2.0), 1.0
    assert Freeze(3) in plan.tick(2.3)
    assert plan.frozen(3, fake.busy(3)) == [Retire(3), Order(4, "accept", None), Thaw(3),
                                            Spawn()]
    assert plan.ended(4, IDLE_BUSY) == [Spawn()]  # a seated worker's end finds no spare


def test_connections_already_served_move_first():
    fake = FakeWorkers()
    plan = supervisor(fake)
    for ident in (10, 11, 12):
        plan.told(1, "opened", (ident, "head", 10.0))
    plan.told(1, "waiting", (12, IDLE, 80.0))  # its request was answered: a client served
    fake.busy_of[1] = (10, 0.0, 0.0, False, 0.0)
    plan.tick(2.0)
    plan.frozen(1, fake.busy(1))
    moved = [a.connection for a in plan.ended(1, fake.busy(1)) if isinstance(a, Order)]
    assert moved == [12, 11]


class World:
    """Fake workers that act between the supervisor's steps: they accept connections, read
    orders only while idle, start and end requests, hand writes over, crash; the world
    carries the supervisor's actions out on them."""

    def __init__(self, seed: int) -> None:
        self.rng, self.now = random.Random(seed), 0.0
        self.fake = FakeWorkers()
        self.plan = Supervisor(self.fake, max_long=2, timeout_s=TIMEOUT_S, waits=WAITS,
                               descriptors=300, workers=2)  # a cap of 44 connections
        self.accepting: set[int] = set()  # told to accept (not a spare)
        self.serving: dict[int, set[int]] = {}
        self.inbox: dict[int, deque] = {}
        self.retired: set[int] = set()
        self.taken: set[int] = set()
        self.later: list = []  # freezes and kills under way
        self.full = False  # workers answer new connections 503 themselves
        self.stopped: set[int] = set()  # frozen until thawed or killed
        self.started: dict[int, float] = {}  # connection -> when its request started
        self.keys, self.idents = iter(range(1, 10**9)), iter(range(1, 10**9))
        self.lost_retires = self.retires = self.kills = self.cut = 0
        for _ in range(3):
            self.spawn()

    def spawn(self) -> None:
        key = next(self.keys)
        self.serving[key], self.inbox[key] = set(), deque()
        self.carry_out(self.plan.started(key))

    def carry_out(self, actions: list) -> None:
        for action in actions:
            match action:
                case Order(worker, kind):
                    self.lost_retires += worker in self.retired and kind == "adopt"
                    if worker in self.inbox:  # else it ended since: the driver drops it
                        self.inbox[worker].append(action)
                case Freeze() | Kill():  # they take effect a little later
                    self.later.append(action)
                case Thaw(worker):
                    self.stopped.discard(worker)
                case Retire(worker):
                    self.retires += 1
                    self.retired.add(worker)
                    self.serving[worker] &= {self.fake.busy(worker)[0]}
                    self.inbox[worker].clear()  # it reads no order again: it ends after
                    assert self.plan.seats[worker].connections <= self.serving[worker]
                case Answer(connection, problem):
                    if problem.status == 503 and "timed out" in str(problem):
                        assert self.now - self.started[connection] >= TIMEOUT_S
                    self.cut += problem.status == 408
                    self.gone(connection)
                case Shut(connection) | Close(connection):
                    self.gone(connection)
                case Take(clock):
                    self.taken.add(clock[0])
                case Spawn():
                    self.spawn()
                case Full(full):
                    self.full = full
                case Fault(error):
                    raise AssertionError(error)

    def gone(self, connection: int) -> None:
        for served in self.serving.values():
            served.discard(connection)
        self.taken.discard(connection)

    def begin(self, worker: int) -> None:
        served = self.serving.get(worker, set())
        if self.fake.busy(worker)[0] or worker in self.retired or not served:
            return
        connection = self.rng.choice(sorted(served))
        if self.rng.random() < 0.1:  # a write: handed over unread
            served.discard(connection)
            self.carry_out(self.plan.told(worker, "take", (connection, "body", self.now + 5)))
            return
        self.started[connection] = self.now
        self.fake.busy_of[worker] = (connection, self.now, self.fake.cpu_s(worker), False, self.now)

    def finish(self, worker: int) -> None:
        connection = self.fake.busy(worker)[0]
        if not connection:
            return
        self.fake.busy_of[worker] = IDLE_BUSY
        if worker in self.retired:
            self.serving[worker].discard(connection)
            self.end(worker)
        elif self.rng.random() < 0.3 and connection in self.serving[worker]:
            self.serving[worker].discard(connection)
            self.carry_out(self.plan.told(worker, "closed", connection))

    def end(self, worker: int) -> None:
        if worker not in self.serving:
            return
        busy = self.fake.busy_of.pop(worker, IDLE_BUSY)
        del self.serving[worker], self.inbox[worker]
        self.carry_out(self.plan.ended(worker, busy))

    def read_order(self, worker: int) -> None:
        if self.fake.busy(worker)[0] or not self.inbox[worker]:
            return
        order = self.inbox[worker].popleft()
        if order.kind == "accept":
            self.accepting.add(worker)
        elif order.kind == "adopt":
            self.serving[worker].add(order.connection)
        elif order.kind == "refuse":
            self.serving[worker].discard(order.value)
        elif order.kind == "release":
            chosen = sorted(self.serving[worker])[:order.value]
            self.serving[worker] -= set(chosen)
            self.carry_out(self.plan.told(worker, "released",
                                          [(c, IDLE, 0.0) for c in chosen]))

    def step(self) -> None:
        rng = self.rng
        while self.later and rng.random() < 0.5:
            action = self.later.pop(rng.randrange(len(self.later)))
            if isinstance(action, Kill):
                self.kills += 1
                self.end(action.worker)
            else:
                busy = None
                if action.worker in self.serving:
                    self.stopped.add(action.worker)
                    busy = self.fake.busy(action.worker)
                self.carry_out(self.plan.frozen(action.worker, busy))
        worker = rng.choice(sorted(self.serving))
        choice = rng.random()
        if worker in self.stopped and choice < 0.75:
            return
        if choice < 0.15 and worker in self.accepting - self.retired and not self.full:
            ident, has_fd = next(self.idents), rng.random() < 0.95
            if has_fd:
                self.serving[worker].add(ident)
            clock = (ident, "head", self.now + WAITS["head"])
            self.carry_out(self.plan.told(worker, "opened", clock, has_fd=has_fd, now=self.now))
        elif choice < 0.35:
            self.read_order(worker)
        elif choice < 0.5:
            self.begin(worker)
        elif choice < 0.6:
            self.finish(worker)
        elif choice < 0.7:
            self.fake.cpu[worker] = self.fake.cpu_s(worker) + rng.random() * 0.05
        elif choice < 0.72:
            self.end(worker)  # it crashed
        elif choice < 0.75 and self.taken:
            connection = rng.choice(sorted(self.taken))
            self.taken.discard(connection)
            self.carry_out(self.plan.give_back(connection) if rng.random() < 0.8
                           else self.plan.drop(connection))
        else:
            self.now += rng.choice((0.001, 0.01, 0.01, 0.1, 0.5))
            self.carry_out(self.plan.tick(self.now))

    def check(self) -> None:
        plan, owners = self.plan, {}
        for worker, served in self.serving.items():
            pending = {o.connection for o in self.inbox[worker] if o.kind == "adopt"}
            for connection in served | pending:
                assert connection not in owners, f"{connection} served twice"
                owners[connection] = worker
        assert not set(owners) & self.taken
        for ident, worker in plan.room.held.items():
            if worker is not None:
                assert ident in plan.seats[worker].connections
        for worker, seat in plan.seats.items():
            if seat.spare:  # it takes no connection before it is told to accept
                assert not seat.connections and worker not in self.accepting
                assert not any(o.kind == "accept" for o in self.inbox.get(worker, ()))
        assert sum(seat.spare and not seat.killed for seat in plan.seats.values()) <= 1
        seen = [c for seat in plan.seats.values() for c in seat.connections]
        assert len(seen) == len(set(seen))
        promoting = sum(1 for _, _, problem in plan.acting.values() if problem is None)
        assert plan.long == sum(s.long for s in plan.seats.values()) + promoting <= 2
        assert len(plan.room.held) <= plan.room.cap


def test_ten_thousand_random_rounds_lose_no_retire_order():
    world = World(seed=29)
    for _ in range(10_000):
        world.step()
        world.check()
    assert world.lost_retires == 0
    assert world.retires > 20 and world.kills > 20 and world.cut > 0  # it was exercised
