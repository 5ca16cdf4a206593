"""The store's one writer, in a process of its own that can be killed (pyoxigraph cannot
interrupt an update): each write is one transaction there; at its deadline the process is
killed (nothing committed), the write answered 503 and a fresh writer started. Checkpoints
are taken there too, on a channel of their own."""

from __future__ import annotations

import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

from pyoxigraph import DefaultGraph, NamedNode

from kgctl.errors import StoreError
from kgctl.service import messages
from kgctl.service.execution import HTTP_UNAVAILABLE, HttpProblem
from kgctl.service.graph_store import documents
from kgctl.service.protocol import UpdateRequest
from kgctl.service.update_dataset import apply_update

START_S = 60.0
WRITE, BACKUP = 0, 1  # the two channels


class StoreWriter:
    """The serving process's handle: the write methods of kgctl.service.dataset.Dataset, each
    run in the writer process, writes within `timeout_s`, in at most `memory_mb`."""

    def __init__(self, path: Path, timeout_s: float, memory_mb: int) -> None:
        self.path, self._timeout_s, self._memory_mb = path, timeout_s, memory_mb
        self._locks = (threading.Lock(), threading.Lock())  # one call at a time per channel
        self._starting = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._channels: tuple[socket.socket, ...] = ()
        self._generation = 0  # counts writer processes: a failed call ends only its own
        self._closed = False
        self.writing = False  # a write is running
        with self._starting:
            self._start()

    def update(self, operation: UpdateRequest, allowed: tuple, *, base_iri: str | None) -> None:
        self._call(WRITE, "update", operation, allowed, base_iri=base_iri)

    def put_graph(self, graph: NamedNode | DefaultGraph, upload: tuple[str, bytes, bool], *,
                  base_iri: str, replace: bool) -> bool:
        return self._call(WRITE, "put_graph", graph, upload, base_iri=base_iri, replace=replace)

    def delete_graph(self, graph: NamedNode | DefaultGraph) -> bool:
        return self._call(WRITE, "delete_graph", graph)

    def backup(self, target: Path) -> None:
        self._call(BACKUP, "backup", target)

    def close(self) -> bool:
        """Stop the writer process; whether no write was running (one running is not committed)."""
        idle = not self.writing
        with self._starting:
            self._closed = True
            self._stop()
        return idle

    def _call(self, channel: int, method: str, *args, **kwargs):
        with self._locks[channel]:
            with self._starting:
                if self._closed:
                    raise StoreError("the service is stopping; nothing was written")
                if self._process is None:  # the last one failed to start: try again
                    self._start()
                generation, sock = self._generation, self._channels[channel]
            # the time limit counts from when a writer process is there
            deadline = time.monotonic() + self._timeout_s if channel == WRITE else None
            self.writing |= channel == WRITE
            try:
                messages.send(sock, (method, args, kwargs))
                if not _wait(sock, deadline):
                    self._end(generation)
                    raise HttpProblem(HTTP_UNAVAILABLE, f"update timed out after "
                                      f"{self._timeout_s:g} s (the server's limit); nothing "
                                      "of it was written")
                reply = messages.receive(sock)
            except OSError:
                reply = None
            finally:
                self.writing &= channel != WRITE
            if reply is None:
                self._end(generation)
                raise StoreError("the store writer stopped; nothing of that write was written")
            ok, value = reply
            if ok:
                return value
            raise value

    def _start(self) -> None:
        ours, theirs = zip(socket.socketpair(), socket.socketpair(), strict=True)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kgctl.service.store_writer", str(self.path),
             *(str(s.fileno()) for s in theirs), str(os.getpid()), str(self._memory_mb)],
            pass_fds=[s.fileno() for s in theirs], start_new_session=True)
        for sock in theirs:
            sock.close()
        self._channels = ours
        if not _wait(ours[WRITE], time.monotonic() + START_S):
            self._stop()
            raise StoreError("the store writer did not start")
        reply = messages.receive(ours[WRITE])
        if reply is not True:  # else why it did not start
            self._stop()
            raise reply if isinstance(reply, Exception) else \
                StoreError("the store writer did not start")

    def _end(self, generation: int) -> None:
        """Kill the writer process `generation` and start a new one in the background."""
        with self._starting:
            if generation == self._generation:
                self._stop()
        threading.Thread(target=self._restart, daemon=True).start()

    def _restart(self) -> None:
        with self._starting:
            if self._process is None and not self._closed:
                try:
                    self._start()
                except StoreError as exc:  # the next call tries again
                    print(f"error: {exc}", file=sys.stderr)

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()  # its lock on the store is released
            self._process = None
        for sock in self._channels:
            sock.close()
        self._channels = ()
        self._generation += 1


def _wait(sock: socket.socket, deadline: float | None) -> bool:
    """Whether `sock` has something to read (or closed) before `deadline`."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if poller.poll(None if left is None else left * 1000):
            return True
        if left == 0.0:
            return False


def main(path: str, write_fd: str, backup_fd: str, parent: str, memory_mb: str) -> None:
    from kgctl.service.dataset import Dataset
    # past it a write ends this process, nothing written (RDF/XML entities expand 1 KB to GBs)
    resource.setrlimit(resource.RLIMIT_DATA, (int(memory_mb) << 20, int(memory_mb) << 20))
    threading.Thread(target=die_with, args=(int(parent),), daemon=True).start()
    channels = [socket.socket(fileno=int(fd)) for fd in (write_fd, backup_fd)]
    try:
        dataset = Dataset.open(Path(path))
    except Exception as exc:  # told to the serving process, which reports it
        messages.send(channels[WRITE], exc)
        return
    messages.send(channels[WRITE], True)  # ready
    threading.Thread(target=serve, args=(channels[BACKUP], dataset), daemon=True).start()
    serve(channels[WRITE], dataset)


def die_with(parent: int) -> None:
    """End this process when `parent` ends, even by SIGKILL, also in the middle of a write:
    the store must be free for the next service. (PR_SET_PDEATHSIG would fire when the
    thread that started this process ends.)"""
    try:
        handle = os.pidfd_open(parent)
        if os.getppid() == parent:  # else it ended already
            select.select([handle], [], [])
    finally:
        os._exit(1)


def serve(channel: socket.socket, dataset) -> None:
    while (message := messages.receive(channel)) is not None:
        method, args, kwargs = message
        call = partial(apply_update, dataset) if method == "update" else getattr(dataset, method)
        try:
            if method == "put_graph":  # a bad Content-Type is the client's: 415, not a crash
                args = (args[0], documents(*args[1]))
            reply = (True, call(*args, **kwargs))
        except Exception as exc:
            reply = (False, exc)
        try:
            messages.send(channel, reply)
        except Exception:  # an error that does not pickle
            messages.send(channel, (False, StoreError(str(reply[1]))))


if __name__ == "__main__":
    main(*sys.argv[1:6])
