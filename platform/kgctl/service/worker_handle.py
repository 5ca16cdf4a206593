"""The owning process's handle on one query worker process: its order socket (orders queue
while the socket is full), its pidfd (signals never reach a reused pid), freezing (SIGSTOP)
and killing it, and its CPU time from /proc."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections import deque
from pathlib import Path
from typing import Protocol

from kgctl.service import messages
from kgctl.service.worker_state import WorkerState

TICK_S = 0.01  # how often the workers' states are looked at
LONG_NICENESS = 10  # long requests yield the cores to short ones
FREEZE_S = 1.0  # longest wait for a worker to stop before trying again later
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Pool(Protocol):
    """What a worker's messages go to (kgctl.service.workers.QueryWorkers)."""

    def ready(self, worker: Worker) -> None: ...

    def told(self, worker: Worker, value, fds: list[int]) -> None: ...

    def ended(self, worker: Worker) -> None: ...


class Worker:
    """This process's end of one worker process."""

    def __init__(self, key: int, pid: int, sock: socket.socket, state: WorkerState, slot: int,
                 pool: Pool) -> None:
        self.key, self.pid, self.slot, self.state = key, pid, slot, state
        self._sock, self._pool = sock, pool
        self._handle = os.pidfd_open(pid)  # signals reach this process, never a reused pid
        self._loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = self._loop.create_future()
        self.alive = True
        # orders wait here while the worker's socket is full (a busy worker reads none)
        self._outbox: deque[tuple[tuple, socket.socket | None]] = deque()
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        while True:
            try:
                message = messages.receive(self._sock)
            except BlockingIOError:
                return
            except OSError:
                message = None
            if message is None:
                self._loop.remove_reader(self._sock.fileno())
                self._loop.remove_writer(self._sock.fileno())
                self._outbox.clear()
                self._sock.close()
                self.alive = False
                if not self.ready.done():
                    self.ready.set_exception(ConnectionError("the query worker stopped"))
                self._pool.ended(self)
                return
            value, fds = message
            if not self.ready.done():  # before its next message is read
                self.ready.set_result(None)
                self._pool.ready(self)
            else:
                self._pool.told(self, value, fds)

    def ask(self, kind: str, value, sock: socket.socket | None = None) -> None:
        """Send an order (with a connection); queued while the worker's socket is full."""
        self._outbox.append(((kind, value), sock))
        if len(self._outbox) == 1:
            self._flush()

    def _flush(self) -> None:
        while self._outbox:
            order, sock = self._outbox[0]
            try:
                if sock is None or sock.fileno() >= 0:  # a connection closed since: skipped
                    messages.send(self._sock, order, [sock.fileno()] if sock else [])
            except BlockingIOError:
                self._loop.add_writer(self._sock.fileno(), self._flush)
                return
            except OSError:  # it ended: its end moves its connections on
                self._outbox.clear()
                return
            self._outbox.popleft()
        self._loop.remove_writer(self._sock.fileno())

    def stopped(self) -> bool:
        """Stopped by a signal (SIGSTOP) or traced."""
        fields = stat(self.pid)
        return bool(fields) and fields[0] in "tT"

    def cpu_s(self) -> float:
        fields = stat(self.pid)
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS if fields else float("inf")

    async def freeze(self) -> bool:
        """Stop the process (SIGSTOP) and wait until it is stopped; False if it ended."""
        if not self._signal(signal.SIGSTOP):
            return False
        deadline = self._loop.time() + FREEZE_S
        while self.alive and self._loop.time() < deadline:
            fields = stat(self.pid)
            if not fields or fields[0] in "ZX":
                return False
            if fields[0] in "tT":
                return True
            await asyncio.sleep(TICK_S / 10)
        self.thaw()
        return False

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def lower_priority(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, self.pid, LONG_NICENESS)
        except OSError:  # already gone: nothing to slow down
            pass

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def close(self) -> None:
        self.kill()
        os.close(self._handle)

    def _signal(self, signum: int) -> bool:
        try:
            signal.pidfd_send_signal(self._handle, signum)
        except (ProcessLookupError, OSError):
            return False
        return True


def stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (state first); empty once gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []
