"""Isolation under threads and crash safety under SIGKILL, embedded backend."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from store_helpers import record, step_triples

from kgctl.store import EmbeddedStore

THREADS = 8
WRITES_PER_THREAD = 500
CRASH_WRITES = 10_000
KILL_AFTER_ACKS = 3_000


def test_eight_threads_two_papers_each_end_with_exactly_their_triples():
    store = EmbeddedStore()
    papers = ("pa", "pb")

    def worker(t: int) -> None:
        paper = papers[t % 2]
        for i in range(WRITES_PER_THREAD):
            n = t * WRITES_PER_THREAD + i
            store.write(paper, insert=step_triples(paper, n, size=2), record=record(paper, n))

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    for k, paper in enumerate(papers):
        expected = {t for thread in range(k, THREADS, 2) for i in range(WRITES_PER_THREAD)
                    for t in step_triples(paper, thread * WRITES_PER_THREAD + i, size=2)}
        assert set(store.triples(paper)) == expected
        trace = store.trace(paper)
        assert [r.seq for r in trace] == list(range(1, THREADS // 2 * WRITES_PER_THREAD + 1))


CHILD = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(Path(__file__).parent)!r})
    from pathlib import Path
    from store_helpers import record, step_triples
    from kgctl.store import EmbeddedStore
    store = EmbeddedStore(Path(sys.argv[1]))
    for n in range({CRASH_WRITES}):
        store.write("pc", insert=step_triples("pc", n), record=record("pc", n))
        sys.stdout.write(f"{{n}}\\n")
        sys.stdout.flush()
""")


def test_sigkill_mid_run_keeps_every_acknowledged_write_and_no_partial_one(tmp_path):
    path = tmp_path / "store"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE,
                             text=True)
    acked = -1
    for line in child.stdout:
        acked = int(line)
        if acked + 1 >= KILL_AFTER_ACKS:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL

    store = EmbeddedStore(path)
    present = set(store.triples("pc"))
    trace = store.trace("pc")
    written = len(trace)
    assert written >= acked + 1  # every acknowledged write is there
    assert written < CRASH_WRITES  # it really was killed mid-run
    expected = {t for n in range(written) for t in step_triples("pc", n)}
    assert present == expected  # whole calls only: graph matches exactly the recorded calls
    assert [r.seq for r in trace] == list(range(1, written + 1))
