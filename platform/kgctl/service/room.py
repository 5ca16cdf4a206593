"""The connections the owning process holds a descriptor of: which worker serves each, the
last wait its worker told of (its clock, handed on when it moves), and the room left under
the descriptor limit.

Every connection costs a descriptor here and one in a worker. At the cap, the connection that
began waiting for its request first (at least EVICT_AFTER_S ago) is answered 408 and closed;
when none is waiting, the shared block says full and workers answer new connections 503.
"""

from __future__ import annotations

import heapq
import mmap
import socket
import time

from kgctl.service.exchange import simple_response
from kgctl.service.worker_handle import Clock, Worker
from kgctl.service.worker_state import full, set_full

HTTP_REQUEST_TIMEOUT = 408
IDLE = "idle"
SPARE_DESCRIPTORS = 256
ROOM_HYSTERESIS = 64
EVICT_AFTER_S = 1.0  # a connection is not cut off for room before it waited this long


class Room:
    def __init__(self, block: mmap.mmap, waits: dict[str, float], descriptors: int) -> None:
        self._block, self._waits = block, waits
        self.held: dict[int, tuple[socket.socket, Worker | None]] = {}
        self.clocks: dict[int, Clock] = {}
        self._slow: list[tuple[float, int]] = []  # (wait began, connection) of HEAD/BODY waits
        self._cap = connection_cap(descriptors)

    def clock(self, clock: Clock) -> None:
        ident, waiting, deadline = clock
        if ident in self.held:
            self.clocks[ident] = clock
            if waiting != IDLE:
                heapq.heappush(self._slow, (deadline - self._waits[waiting], ident))

    def make_room(self) -> None:
        """At the cap, end the connections slowest to send their request (408; only those
        waiting at least EVICT_AFTER_S); when none is, workers answer new connections 503
        until there is room."""
        was_full = full(self._block)
        room = self._cap - ROOM_HYSTERESIS if was_full else self._cap
        while len(self.held) >= room:
            victim = self._slowest()
            if victim is None:
                break
            sock, worker = self.held[victim]
            if worker is not None:
                worker.connections.discard(victim)
            self.forget(victim)
            say(sock, simple_response(HTTP_REQUEST_TIMEOUT, b"error: request not received "
                                       b"in time (the server is full)\n", keep_alive=False))
            shut(sock)
        if (len(self.held) >= room) != was_full:
            set_full(self._block, not was_full)

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
        clock = self.clocks.get(ident)
        return clock is not None and clock[1] != IDLE and self.held[ident][1] is not None \
            and clock[2] - self._waits[clock[1]] == started

    def forget(self, ident: int) -> socket.socket | None:
        sock, _ = self.held.pop(ident, (None, None))
        self.clocks.pop(ident, None)
        if len(self._slow) > 4 * len(self.held) + 64:  # drop what no longer counts
            self._slow = [(s, i) for s, i in self._slow if self._still_slow(s, i)]
            heapq.heapify(self._slow)
        return sock

    def close(self) -> None:
        for sock, _ in self.held.values():
            sock.close()
        self.held.clear()
        self.clocks.clear()


def connection_cap(descriptors: int) -> int:
    """Connections held at most with `descriptors` (the owning process's limit): the rest is
    kept for the store's files, the workers' sockets and the answers being written.

    >>> connection_cap(1024), connection_cap(20000)
    (768, 18750)
    """
    return descriptors - max(SPARE_DESCRIPTORS, descriptors // 16)


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
