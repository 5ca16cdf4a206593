"""Read-only views of the store for the query workers: RocksDB checkpoints that no process
writes (pyoxigraph leaves reading a directory another process writes undefined), taken
after writes into ``.<store>.views-<pid>-<random>/<writes>`` beside the store and deleted once
superseded longer than any request may run (docs/service.md)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from kgctl.errors import StoreError
from kgctl.service.store_writer import StoreWriter
from kgctl.service.workers import view_path


class Views:
    """The owning process's side: takes the checkpoints and deletes old ones."""

    def __init__(self, dataset: StoreWriter, keep_s: float) -> None:
        self._dataset, self._keep_s = dataset, keep_s
        prefix = f".{dataset.path.name}.views-"
        for left in dataset.path.parent.glob(prefix + "*"):  # by a server that was killed
            if not Path(f"/proc/{left.name.removeprefix(prefix).split('-')[0]}").is_dir():
                shutil.rmtree(left, ignore_errors=True)
        self.root = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-",
                                          dir=dataset.path.parent))
        self._superseded: list[tuple[float, Path]] = []
        self._current: Path | None = None

    def take(self, generation: int) -> None:
        """Checkpoint the store as `generation` (in the writer thread, after a write)."""
        path = view_path(self.root, generation)
        shutil.rmtree(path, ignore_errors=True)  # begun by a writer process that was killed
        self._dataset.backup(path)
        now = time.monotonic()
        if self._current is not None:
            self._superseded.append((now, self._current))
        self._current = path
        while self._superseded and now - self._superseded[0][0] > self._keep_s:
            shutil.rmtree(self._superseded.pop(0)[1], ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class Checkpoints:
    """After writes, a thread takes a view that holds them; a read waits (`fresh`) for the
    view holding every write made before it arrived (a client reads its own writes)."""

    RETRY_S = 1.0  # a failed checkpoint is taken again this soon: reads wait for it

    def __init__(self, views: Views, loop: asyncio.AbstractEventLoop) -> None:
        self._views, self._loop = views, loop
        self.written = self.published = 0  # writes made; writes the newest view holds
        self._waiting: list[tuple[int, asyncio.Future]] = []
        self._wake, self._stopping = threading.Event(), False
        self._thread = threading.Thread(target=self._run, name="kgctl-views", daemon=True)
        self._thread.start()

    def changed(self) -> None:
        """A write was made (in the event loop's thread)."""
        self.written += 1
        self._wake.set()

    async def fresh(self) -> int:
        """The newest view, once it holds every write made so far."""
        if self.published >= self.written:
            return self.published
        ready = self._loop.create_future()
        self._waiting.append((self.written, ready))
        return await ready

    def _publish(self, holds: int) -> None:
        self.published = holds
        for wanted, ready in self._waiting:
            if wanted <= holds and not ready.done():
                ready.set_result(holds)
        self._waiting = [(wanted, ready) for wanted, ready in self._waiting if not ready.done()]

    def _run(self) -> None:
        failed = False
        while True:
            self._wake.wait(self.RETRY_S if failed else None)
            self._wake.clear()
            if self._stopping:
                return
            holds = self.written
            try:
                self._views.take(holds)
            except (StoreError, OSError) as exc:
                print(f"error: no checkpoint of the store yet ({exc}); trying again in "
                      f"{self.RETRY_S:g} s", file=sys.stderr)
                failed = True
            else:
                failed = False
                self._loop.call_soon_threadsafe(self._publish, holds)

    def close(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join()
