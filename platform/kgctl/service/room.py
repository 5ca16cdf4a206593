"""What the serving process may hold: connections, read bodies, answers not taken.

>>> room = Room(cap=2)
>>> room.opened("a", now=0.0), room.opened("b", now=0.5), room.opened("c", now=0.9)
((None, False), (None, False), (None, True))
>>> room.opened("d", now=1.2)  # "a" waited over a second for its request: it gives way
('a', False)
"""

from __future__ import annotations

SPARE_DESCRIPTORS = 256
EVICT_AFTER_S = 1.0  # a connection is not cut off for room before it waited this long


class Room:
    """Which connections wait for a request (since when: opened, or kept alive after a
    response), and whether there is room for one more: at the cap, the one that began waiting
    first gives way if it waited at least EVICT_AFTER_S, else the new one is refused. Those
    two are answered, then held open a while beyond the cap (so that the client reads its
    answer before a reset), at most `beyond` at once. Read bodies (from their first byte until
    answered) hold at most `memory` bytes together, and so do answers not taken; past it, the
    connection whose body grew least lately, or whose answer waited longest, is cut off. A pure
    state machine (`memory` 0: no bound)."""

    def __init__(self, cap: int, beyond: int = 0, memory: int = 0) -> None:
        self.cap, self.beyond, self.held, self.memory = cap, beyond, set(), memory
        self.waiting: dict[object, float] = {}  # in the order they began waiting
        self.lingering: set = set()
        self.bodies = 0  # bytes of read bodies held: arriving, or handed to a worker
        self.arriving: dict[object, int] = {}  # by connection, grown least lately first
        self.unsent: dict[object, int] = {}  # bytes of an answer not taken, oldest first

    def opened(self, connection, now: float) -> tuple[object | None, bool]:
        """(a connection to cut off for room, whether to refuse `connection` instead)."""
        victim = None
        if len(self.held) >= self.cap:
            first = next(iter(self.waiting), None)
            if first is None or now - self.waiting[first] < EVICT_AFTER_S:
                return None, True
            victim = first
            self.closed(victim)
        self.held.add(connection)
        self.waiting[connection] = now
        return victim, False

    def waits(self, connection, now: float) -> None:
        """`connection` answered its request and waits for another."""
        if connection in self.held:
            self.waiting.pop(connection, None)
            self.waiting[connection] = now

    def busy(self, connection) -> None:
        """`connection`'s request head arrived."""
        self.waiting.pop(connection, None)

    def linger(self, connection) -> bool:
        """Whether `connection`, refused for room, may stay open a while (else it closes once
        its answer is written: a flood of them lingering ran the process out of descriptors,
        and new connections were then closed unanswered)."""
        if len(self.lingering) >= self.beyond:
            return False
        self.lingering.add(connection)
        return True

    def receives(self, connection, size: int) -> list | None:
        """`connection`'s read body grew by `size` bytes: the connections to cut off to keep
        within `memory`, or None when none can be (refuse this one)."""
        cut = self._cut(self.arriving, connection, self.bodies + size)
        if cut is not None:
            self.bodies += size
            self.arriving[connection] = self.arriving.pop(connection, 0) + size
        return cut

    def handed(self, connection, size: int) -> None:
        """`size` bytes of `connection`'s body went to a worker: held until `answered`."""
        if left := self.arriving.pop(connection) - size:
            self.arriving[connection] = left

    def answered(self, size: int) -> None:
        self.bodies -= size

    def holds(self, connection, size: int) -> list:
        """`connection` holds `size` bytes of an answer its client has not taken (0: it took
        it): the connections to cut off, longest holding first, to keep within `memory`."""
        self.unsent.pop(connection, None)
        if size:
            self.unsent[connection] = size
        return self._cut(self.unsent, connection, sum(self.unsent.values())) or []

    def _cut(self, held: dict, connection, total: int) -> list | None:
        """Those of `held` but `connection` to close, in order, for `total` bytes to fit."""
        excess, cut = total - self.memory if self.memory else 0, []
        for other, size in held.items():
            if excess <= 0:
                break
            if other is not connection:
                excess -= size
                cut.append(other)
        if excess > 0:
            return None
        for other in cut:
            self.closed(other)
        return cut

    def closed(self, connection) -> None:
        self.bodies -= self.arriving.pop(connection, 0)
        self.unsent.pop(connection, None)
        self.held.discard(connection)
        self.waiting.pop(connection, None)
        self.lingering.discard(connection)


def connection_cap(descriptors: int) -> int:
    """Connections held at most with `descriptors` (the serving process's limit): the rest is
    kept for the listen backlog, the connections refused for room while they linger (the
    serving process shares it out), the workers' sockets, the files and the writes
    (tests/test_service_http.py shows the cap at 1,024, 4,096 and 20,000)."""
    return descriptors - max(SPARE_DESCRIPTORS, descriptors // 16)
