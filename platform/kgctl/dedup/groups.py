"""The out-of-core engine's group steps: pure functions over the rows of one group (a block of
names, a part of the evidence), run in the engine's process or on the workers of a Dask cluster.

Groups are independent and their results are rows the engine sorts afterwards, so a cluster
may compute them in any order. Tasks carry batches of groups (about TASK_ROWS rows each: blocks
as Python rows, parts as Parquet written by DuckDB) and at most WINDOW tasks per worker thread
are in flight: the engine holds a bounded number of rows however many groups there are. Dask
is imported only when a cluster is asked for.

>>> t = Thresholds()
>>> score_block([7, 8, 9], ["north station", "north stations", "west road"], t)
[(7, 8, 96, True)]
>>> steps = [(0, 0, 0, 1, 100.0, "exact-name", "west road", "", "p1#a", [], "p2#b", [],
...           2, "west road", "", 1, 0, 0)]
>>> [(table, row[:2]) for table, row in replay_part(steps, t, set())]
[('decision', ('p1#a', 'p2#b')), ('root', (0, 0)), ('root', (1, 0))]
"""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from itertools import islice
from uuid import uuid4

from kgctl.dedup.cluster import Resolver, Thresholds, block_scores
from kgctl.dedup.keys import locant_signature
from kgctl.errors import InputError

TASK_ROWS = 10_000  # rows (names of blocks, steps of parts) in one task
WINDOW = 4  # tasks in flight per worker thread


def score_block(nids: Sequence[int], names: Sequence[str],
                t: Thresholds) -> list[tuple[int, int, int, bool]]:
    """(name id, name id, score, merges) of the pairs of one block (or slice of one) scoring at
    least the review threshold; merges: at the merge threshold with the same locants."""
    return [(nids[r], nids[c], score, score >= t.merge
             and locant_signature(names[r]) == locant_signature(names[c]))
            for r, c, score in block_scores(names, t.review)]


def score_blocks(blocks: list[tuple[list[int], list[str]]],
                 t: Thresholds) -> list[tuple[int, int, int, bool]]:
    return [pair for nids, names in blocks for pair in score_block(nids, names, t)]


def replay_part(steps: Iterable[Sequence], t: Thresholds,
                rejected: set[frozenset]) -> Iterator[tuple[str, tuple]]:
    """One part's steps, in the in-memory engine's order, through a fresh `Resolver`. A step
    is (part, side, a, b, score, method, left, right, rep a, keys a, rep b, keys b, *sort key);
    side 0 is an edge inside the part, 1 or 2 its side of a fuzzy pair to another part. Yields
    (table, row): a `decision` row for each merge, review pair or refusal as it is made, a
    `probe` row for each side (its conflict keys at the pair's turn), then a `root` row for
    each node. Streamed: a part can hold most of the corpus."""
    resolver = Resolver(t, rejected)
    for _, side, a, b, score, method, left, right, rep_a, keys_a, rep_b, keys_b, *order in steps:
        if side != 2:
            resolver.add(a, rep_a, keys_a)
        if side != 1:
            resolver.add(b, rep_b, keys_b)
        if side:
            yield "probe", (order[4], order[5], side,
                            json.dumps(resolver.probe(a if side == 1 else b), sort_keys=True))
            continue
        resolver.edge(a, b, score, method, left, right)
        for kind, pairs in (("decision", resolver.decisions), ("grey", resolver.grey),
                            ("refused", resolver.refused)):
            for p in pairs:
                yield "decision", (p.a, p.b, p.score, p.method, p.evidence, kind, *order)
            pairs.clear()
    for node in resolver.parent:
        yield "root", (node, resolver.find(node))


def tasks(groups: Iterable, weight: Callable[[object], int] = len) -> Iterator[list]:
    """Groups gathered into tasks of about TASK_ROWS rows."""
    task, rows = [], 0
    for group in groups:
        task.append(group)
        rows += weight(group)
        if rows >= TASK_ROWS:
            yield task
            task, rows = [], 0
    if task:
        yield task


def mapped(fn: Callable, work: Iterable[list], *args: object, client=None) -> Iterator:
    """fn(task, *args) for every task: here, in order, or on the workers of a Dask `client`,
    as they complete."""
    if client is None:
        for task in work:
            yield fn(task, *args)
        return
    from concurrent.futures import CancelledError

    from distributed import KilledWorker, as_completed

    def submit(task: list):  # pickled both ways: Dask would walk every row
        return client.submit(_unpickled, fn, pickle.dumps(task, pickle.HIGHEST_PROTOCOL),
                             *shared, key=f"{fn.__name__}-{uuid4().hex}")

    try:
        shared = [client.scatter([arg], broadcast=True)[0] for arg in args]
        work = iter(work)
        window = WINDOW * max(1, sum(client.nthreads().values()))
        running = as_completed(map(submit, islice(work, window)), loop=client.loop)
        for future in running:
            result = pickle.loads(future.result())
            future.release()
            for task in islice(work, 1):
                running.add(submit(task))
            yield result
    except (OSError, TimeoutError, CancelledError, KilledWorker) as exc:
        raise InputError(f"the Dask cluster failed: {exc or type(exc).__name__}") from None


def _unpickled(fn: Callable, task: bytes, *args: object) -> bytes:
    return pickle.dumps(fn(pickle.loads(task), *args), pickle.HIGHEST_PROTOCOL)


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator:
    """A Dask client to the scheduler at `scheduler`, or to `workers` worker processes started
    here on 127.0.0.1 (stopped on exit); None when neither is given."""
    if scheduler is None and not workers:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
        from distributed.comm import resolve_address
    except ImportError:
        raise InputError("a Dask cluster needs the packages dask and distributed "
                         "(pip install 'kgctl[cluster]')") from None
    with ExitStack() as stack:
        try:
            if scheduler:  # a bad address fails here (a client that failed to start hangs)
                resolve_address(scheduler)
            address = scheduler or stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, silence_logs=logging.CRITICAL))  # errors: ours, one line
            client = stack.enter_context(Client(address, set_as_default=False))
        except (OSError, ValueError, TimeoutError) as exc:
            where = f"the Dask scheduler {scheduler}" if scheduler else f"{workers} Dask workers"
            raise InputError(f"cannot reach {where}: {exc}") from None
        yield client
