"""What each query worker tells the owning process without a message: a small shared memory
block, a slot per worker, plus the store's change counter, when the owning process last
watched the workers (its watchdog's heartbeat, for ``/healthz``) and whether the service is
full (no room for another connection: workers answer new ones 503).

A worker writes which connection's request it is answering, since when, its CPU time then,
whether it has begun writing the response and since when the request was awaited (its
deadline counts from then); the owning process reads that (freezing the
worker first when it must act on it) and writes ``retire``.

>>> block = states_block(4)
>>> state = WorkerState(block, 2)
>>> state.begin(7, 1.5, 0.25, 1.25); state.busy()
(7, 1.5, 0.25, False, 1.25)
>>> state.writing(); state.busy()[3], WorkerState(block, 1).busy()
(True, (0, 0.0, 0.0, False, 0.0))
"""

from __future__ import annotations

import mmap
import struct

# connection (0: idle), started, CPU time then, writing, awaited since; the retire byte follows
# and only the owning process writes it (a worker rewriting it from an earlier read could undo
# a retire)
BUSY = struct.Struct("=qdd?d")
RETIRE = BUSY.size
SLOT_BYTES = 40
GENERATION = struct.Struct("=q")  # at 0: the newest checkpoint view (the writes it holds)
WATCHED = struct.Struct("=d")  # at 8: time.monotonic() of the watchdog's last round
FULL = 16  # a byte the owning process sets while it holds all the connections it may
WRITTEN = 24  # a count of the writes made (GENERATION catches up when a checkpoint is made)
SLOTS_AT = 32


def block_size(slots: int) -> int:
    return SLOTS_AT + slots * SLOT_BYTES


def states_block(slots: int, fd: int = -1) -> mmap.mmap:
    """The shared block (anonymous, or over the memfd `fd` of `block_size(slots)` bytes)."""
    return mmap.mmap(fd, block_size(slots))


def generation(block: mmap.mmap) -> int:
    return GENERATION.unpack_from(block)[0]


def set_generation(block: mmap.mmap, value: int) -> None:
    GENERATION.pack_into(block, 0, value)


def written(block: mmap.mmap) -> int:
    return GENERATION.unpack_from(block, WRITTEN)[0]


def bump_written(block: mmap.mmap) -> None:
    GENERATION.pack_into(block, WRITTEN, written(block) + 1)


def watched(block: mmap.mmap) -> float:
    return WATCHED.unpack_from(block, GENERATION.size)[0]


def mark_watched(block: mmap.mmap, now: float) -> None:
    WATCHED.pack_into(block, GENERATION.size, now)


def full(block: mmap.mmap) -> bool:
    return bool(block[FULL])


def set_full(block: mmap.mmap, value: bool) -> None:
    block[FULL] = value


class WorkerState:
    def __init__(self, block: mmap.mmap, slot: int) -> None:
        self._block, self._at = block, SLOTS_AT + slot * SLOT_BYTES

    def begin(self, connection: int, started: float, cpu_s: float,
              since: float | None = None) -> None:
        BUSY.pack_into(self._block, self._at, connection, started, cpu_s, False,
                       started if since is None else since)

    def writing(self) -> None:
        self._block[self._at + 24] = 1

    def end(self) -> None:
        BUSY.pack_into(self._block, self._at, 0, 0.0, 0.0, False, 0.0)

    def busy(self) -> tuple[int, float, float, bool, float]:
        """(connection, started, CPU time then, writing, awaited since); connection 0 when
        idle."""
        return BUSY.unpack_from(self._block, self._at)

    def retiring(self) -> bool:
        return bool(self._block[self._at + RETIRE])

    def retire(self) -> None:
        self._block[self._at + RETIRE] = 1

    def clear(self) -> None:
        """Reset the slot for a new worker (by the owning process, the old one gone)."""
        self.end()
        self._block[self._at + RETIRE] = 0
