"""Test and benchmark helper: MOP-30 paper graphs rebuilt by replaying the bundled traces
(domains/mop30/benchmark/traces, made by the round-trip oracle) through the compiled tools, the
one way the project builds the MOP-30 graph (as `kgctl demo` does).
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from pathlib import Path

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import ReplayReport, load_calls, replay_traces
from kgctl.pipeline.demo import bundled_traces, compile_all
from kgctl.store import open_store
from kgctl.store.base import GraphStore


@cache
def traces_by_paper() -> dict[str, Path]:
    """Paper id -> its bundled trace file."""
    return {load_calls(path)[0]: path for path in bundled_traces()}


def replay_into(store: GraphStore, papers: Collection[str] | None = None) -> list[ReplayReport]:
    """Replay the traces of `papers` (default: every bundled paper) into `store`."""
    found = traces_by_paper()
    missing = sorted(set(papers or ()) - set(found))
    if missing:
        raise LookupError(f"no bundled trace for {missing}")
    paths = [found[p] for p in sorted(papers if papers is not None else found)]
    _compiled, (ir, surface), _plan = compile_all()
    return run_sync(lambda: replay_traces(paths, ir=ir, store=store, surface=surface))


def replayed_store(papers: Collection[str] | None = None, *, path: Path | None = None
                   ) -> GraphStore:
    """A store (in memory unless `path`) holding the replayed graphs of `papers`."""
    store = open_store(path=path)
    replay_into(store, papers)
    return store
