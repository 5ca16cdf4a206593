"""A domain pack's demo graphs for ``kgctl serve --seed``, the service tests and the load
benchmark: the pack's ground-truth traces replayed through its compiled MCP tools, exactly as
``kgctl demo`` builds its store (paper graphs plus their provenance graphs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyoxigraph import Quad

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import replay_traces
from kgctl.errors import DataRejected
from kgctl.packs import load_pack
from kgctl.pipeline.demo import bundled_traces, compile_all
from kgctl.store.embedded import EmbeddedStore


def pack_quads(domain: str | Path | None = None, traces: Sequence[Path] | None = None
               ) -> list[Quad]:
    """Every quad of the graphs the traces (default: all of the pack's ground-truth traces)
    rebuild through the tools of the pack (default: the default pack)."""
    pack = load_pack(domain)
    _compiled, (ir, surface), _plan = compile_all(pack=pack)
    store = EmbeddedStore()
    paths = list(traces) if traces is not None else bundled_traces(pack)
    reports = run_sync(lambda: replay_traces(paths, ir=ir, store=store, surface=surface))
    refused = [f"{r.paper_id} call {x.position} ({x.tool})" for r in reports for x in r.refused]
    if refused:
        raise DataRejected(f"{len(refused)} traced call(s) refused on replay, first: "
                           f"{refused[0]}; the traces no longer match the tools")
    return list(store.quads())
