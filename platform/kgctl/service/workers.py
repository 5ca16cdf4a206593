"""A fixed pool of daemon worker threads for queries.

pyoxigraph 0.5 cannot interrupt a query that computes before its first row (an aggregate over
a huge join). Such a query keeps its worker until it finishes; daemon threads make sure it
never holds up the end of the process, which ``concurrent.futures`` workers would.

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


class WorkerPool:
    def __init__(self, workers: int, *, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def shutdown(self) -> None:
        """Ask every worker to stop after its current job; queued jobs are cancelled."""
        for _ in self._threads:
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
