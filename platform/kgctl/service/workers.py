"""A fixed pool of daemon worker threads for queries.

pyoxigraph 0.5 cannot interrupt a query that computes before its first row (an aggregate over
a huge join). Such a query keeps its worker until it finishes: ``replace_stuck`` starts a
stand-in (up to twice the pool size) and the pool shrinks back as stuck workers return. Daemon
threads make sure a stuck query never holds up the end of the process.

>>> pool = WorkerPool(2, name="doc")
>>> pool.submit(sum, [1, 2, 3]).result()
6
>>> pool.shutdown()
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_STOP = None
STAND_IN_FACTOR = 2  # at most this many times the pool size while queries are stuck


class WorkerPool:
    def __init__(self, workers: int, *, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._name, self._size, self._most = name, workers, workers * STAND_IN_FACTOR
        self._lock = threading.Lock()
        self._live = 0
        for _ in range(workers):
            self._start()

    def _start(self) -> None:
        self._live += 1
        threading.Thread(target=self._work, name=f"{self._name}-{self._live}", daemon=True
                         ).start()

    def replace_stuck(self) -> None:
        """A worker is stuck in an uninterruptible job: add a stand-in while there is room."""
        with self._lock:
            if self._live < self._most:
                self._start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def shutdown(self) -> None:
        """Ask every worker to stop after its current job; queued jobs are cancelled."""
        for _ in range(self._most):
            self._jobs.put(_STOP)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not _STOP:
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the waiting request, not lost
                future.set_exception(exc)
            with self._lock:
                if self._live > self._size:  # a stand-in is no longer needed
                    self._live -= 1
                    return
