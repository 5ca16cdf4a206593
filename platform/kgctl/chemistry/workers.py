"""A bounded pool of killable chemistry workers: every call ends within its deadline.

Each worker is a process of its own (`python -m kgctl.chemistry.tasks`, in its own process
group, with its own OPSIN JVM and RDKit), serving one call at a time over a line of JSON each
way. A call waits for an idle worker and runs there; when the deadline passes first, the worker
and its JVM are killed and a fresh one is started in the background, so a name that would take
a minute costs its caller the deadline and the others nothing but that worker until the fresh
one is ready. Workers join the pool only once warm (RDKit imported, the JVM answering), so no
caller waits for a start.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import kgctl
from kgctl.chemistry.errors import ChemistryUnavailable
from kgctl.errors import KgctlError

DEADLINE_S = 5.0
WORKERS = 2
START_TIMEOUT_S = 120.0  # a cold worker (RDKit, a JVM) on a busy machine


class DeadlineExceeded(KgctlError):
    """A call did not finish within the deadline (it was stopped), or found no idle worker."""


class _Worker:
    def __init__(self) -> None:
        source = str(Path(kgctl.__file__).resolve().parents[1])
        path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kgctl.chemistry.tasks"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
            start_new_session=True, env={**os.environ, "PYTHONPATH": path})

    def ready(self, timeout: float) -> bool:
        return self._read(timeout) == {"ready": True}

    def run(self, task: str, args: tuple[Any, ...], timeout: float) -> dict[str, Any]:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"task": task, "args": args}) + "\n")
            self.process.stdin.flush()
        except OSError:
            pass  # a worker that died: reported below
        answer = self._read(timeout)
        if answer is not None and "ok" in answer:
            return answer["ok"]
        if answer is not None and "unavailable" in answer:
            raise ChemistryUnavailable(answer["unavailable"])
        self.kill()
        if answer == {}:
            raise DeadlineExceeded(f"stopped after {timeout:.1f} s")
        raise ChemistryUnavailable("a chemistry worker ended unexpectedly")

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The next answer; {} when none came within `timeout`; None when the worker is gone."""
        out = self.process.stdout
        assert out is not None
        try:
            if not select.select([out], [], [], max(timeout, 0.0))[0]:
                return {}
            line = out.readline()
        except (OSError, ValueError):
            return None
        return json.loads(line) if line else None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the worker and its JVM
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class Pool:
    """`call(task, *args)`: the task's answer (JSON), computed by one of `size` workers within
    `deadline` seconds (waiting for an idle worker included), or `DeadlineExceeded`."""

    def __init__(self, *, size: int = WORKERS, deadline: float = DEADLINE_S) -> None:
        self.size, self.deadline = size, deadline
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = self._started = False

    def start(self) -> None:
        """Start every worker and wait until they are warm (once)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threads = [threading.Thread(target=self._replace, daemon=True) for _ in range(self.size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self._idle.empty():
            raise ChemistryUnavailable("no chemistry worker could start")

    def call(self, task: str, *args: Any) -> dict[str, Any]:
        ends = time.monotonic() + self.deadline
        try:
            worker = self._idle.get(timeout=self.deadline)
        except queue.Empty:
            raise DeadlineExceeded(f"every worker stayed busy for {self.deadline:.1f} s") \
                from None
        try:
            answer = worker.run(task, args, ends - time.monotonic())
        except (DeadlineExceeded, ChemistryUnavailable):
            if worker.process.poll() is None:
                self._idle.put(worker)
            else:
                self._forget(worker)
                threading.Thread(target=self._replace, daemon=True).start()
            raise
        self._idle.put(worker)
        return answer

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all = list(self._all), set()
        for worker in workers:
            worker.kill()

    def _replace(self) -> None:
        with self._lock:
            if self._closed:
                return
            worker = _Worker()
            self._all.add(worker)
        if worker.ready(START_TIMEOUT_S):
            self._idle.put(worker)
        else:
            self._forget(worker)
            worker.kill()

    def _forget(self, worker: _Worker) -> None:
        with self._lock:
            self._all.discard(worker)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
