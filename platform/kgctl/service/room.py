"""The connections the owning process holds (their numbers): which worker serves each, the
last wait its worker told of (its clock, handed on when it moves), and the room left under
the descriptor limit (docs/service.md).

>>> room = Room({"head": 10.0, "body": 30.0}, descriptors=1024)
>>> room.cap
768
>>> room.cap = 2
>>> room.hold(1, worker=7, clock=(1, "head", 20.0)); room.hold(2, worker=7, clock=(2, IDLE, 0.0))
>>> room.crowded(now=10.5), room.full, room.crowded(now=11.0)
([], True, [(1, 7)])
"""

from __future__ import annotations

import heapq

IDLE = "idle"
SPARE_DESCRIPTORS = 256
ROOM_HYSTERESIS = 64
EVICT_AFTER_S = 1.0  # a connection is not cut off for room before it waited this long
Clock = tuple[int, str, float]  # a connection, what it waits for (idle, head, body), until when


class Room:
    def __init__(self, waits: dict[str, float], descriptors: int) -> None:
        self._waits = waits
        self.held: dict[int, int | None] = {}  # connection -> its worker (None: none now)
        self.clocks: dict[int, Clock] = {}
        self._slow: list[tuple[float, int]] = []  # (wait began, connection) of head/body waits
        self.cap = connection_cap(descriptors)
        self.full = False

    def hold(self, ident: int, worker: int | None, clock: Clock) -> None:
        self.held[ident] = worker
        self.clock(clock)

    def clock(self, clock: Clock) -> None:
        ident, waiting, deadline = clock
        if ident in self.held:
            self.clocks[ident] = clock
            if waiting != IDLE:
                heapq.heappush(self._slow, (deadline - self._waits[waiting], ident))

    def crowded(self, now: float) -> list[tuple[int, int | None]]:
        """The connections (and their workers) to end for room: the slowest to send their
        request, each waiting at least EVICT_AFTER_S; forgotten here. `full` says whether the
        cap is still reached."""
        room = self.cap - ROOM_HYSTERESIS if self.full else self.cap
        victims = []
        while len(self.held) >= room and (victim := self._slowest(now)) is not None:
            victims.append((victim, self.held[victim]))
            self.forget(victim)
        self.full = len(self.held) >= room
        return victims

    def _slowest(self, now: float) -> int | None:
        while self._slow:
            started, ident = self._slow[0]
            if not self._still_slow(started, ident):
                heapq.heappop(self._slow)
            elif now - started < EVICT_AFTER_S:
                return None
            else:
                heapq.heappop(self._slow)
                return ident
        return None

    def _still_slow(self, started: float, ident: int) -> bool:
        clock = self.clocks.get(ident)
        return clock is not None and clock[1] != IDLE and self.held[ident] is not None \
            and clock[2] - self._waits[clock[1]] == started

    def forget(self, ident: int) -> bool:
        """Whether `ident` was held."""
        held = self.held.pop(ident, False) is not False
        self.clocks.pop(ident, None)
        if len(self._slow) > 4 * len(self.held) + 64:  # drop what no longer counts
            self._slow = [(s, i) for s, i in self._slow if self._still_slow(s, i)]
            heapq.heapify(self._slow)
        return held


def connection_cap(descriptors: int) -> int:
    """Connections held at most with `descriptors` (the owning process's limit): the rest is
    kept for the store's files, the workers' sockets and the answers being written.

    >>> connection_cap(1024), connection_cap(20000)
    (768, 18750)
    """
    return descriptors - max(SPARE_DESCRIPTORS, descriptors // 16)
