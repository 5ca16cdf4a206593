"""What the serving process may hold: connections under the descriptor limit, and the bytes
of read bodies and of answers that clients have not taken. Pure state machines over the clock
given.

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
    answer before a reset), at most `beyond` at once.

    The bodies of reads, from their first byte until answered, hold at most `memory` bytes
    together (past it a body is refused), and so do the answers clients have not taken (past
    it the connection holding one longest is cut off); 0: no bound."""

    def __init__(self, cap: int, beyond: int = 0, memory: int = 0) -> None:
        self.cap, self.beyond, self.held, self.memory = cap, beyond, set(), memory
        self.waiting: dict[object, float] = {}  # in the order they began waiting
        self.lingering: set = set()
        self.bodies = 0  # bytes of read bodies held
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

    def receives(self, size: int) -> bool:
        """Whether a read's body may hold `size` bytes more (negative: it holds them no
        longer)."""
        if 0 < size and self.memory and self.bodies + size > self.memory:
            return False
        self.bodies += size
        return True

    def holds(self, connection, size: int) -> list:
        """`connection` holds `size` bytes of an answer its client has not taken (0: it took
        it): the connections to cut off, longest holding first, to keep within `memory`."""
        self.unsent.pop(connection, None)
        if size:
            self.unsent[connection] = size
        excess, cut = sum(self.unsent.values()) - self.memory, []
        for other, held in self.unsent.items():
            if not self.memory or excess <= 0 or other is connection:
                break
            excess -= held
            cut.append(other)
        for other in cut:
            self.closed(other)
        return cut

    def closed(self, connection) -> None:
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
