"""Faults on both tested servers (`oxigraph serve`, Virtuoso 7): the server killed in the middle
of replaying the largest MOP-30 paper leaves that paper old or new, never partial; answers lost
after the server committed (a proxy drops every 25th) neither reuse IRIs nor merge entities."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from evaluation_helpers import replay_into, traces_by_paper
from proxy_helpers import Proxy
from store_helpers import OxigraphServer
from virtuoso_helpers import VirtuosoServer, missing_reason

from kgctl.agent.replay import load_calls
from kgctl.errors import StoreError
from kgctl.instantiation.engine import Instantiator
from kgctl.instantiation.server import run_tool
from kgctl.pipeline.demo import compile_all
from kgctl.store import EmbeddedStore, canonical_nquads, open_store
from kgctl.store.trace import replay

SMALL_BATCH = "300"  # quads per request: the replay of the largest paper takes many requests
DROP_EVERY = 25
SERVERS = ["oxigraph", pytest.param("virtuoso", marks=pytest.mark.skipif(
    missing_reason() is not None, reason=str(missing_reason())))]


class Running:
    """One server of either kind that a test may kill and start again on the same data."""

    def __init__(self, kind: str, location: Path) -> None:
        self.kind, self.location = kind, location
        self.server = OxigraphServer(location) if kind == "oxigraph" else VirtuosoServer(location)

    @property
    def url(self) -> str:
        return self.server.url

    def env(self) -> dict[str, str]:
        return self.server.env() if self.kind == "virtuoso" else {}

    def kill(self) -> None:
        self.server.kill()

    def restart(self) -> None:
        if self.kind == "oxigraph":
            self.server = OxigraphServer(self.location)
        else:
            self.server.restart()

    def proxied(self, **options) -> tuple[Proxy, str]:
        parts = urlsplit(self.url)
        proxy = Proxy(f"{parts.scheme}://{parts.netloc}", **options)
        return proxy, proxy.url(parts.path)


@pytest.fixture(scope="module", params=SERVERS)
def running(request, tmp_path_factory):
    srv = Running(request.param, tmp_path_factory.mktemp(request.param))
    yield srv
    srv.server.stop()


@pytest.fixture(autouse=True)
def credentials(running, monkeypatch):
    for key, value in running.env().items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="module")
def largest():
    """The largest bundled paper written through the tools: (id, trace, canonical text)."""
    pid = max(traces_by_paper(), key=lambda p: traces_by_paper()[p].stat().st_size)
    store = EmbeddedStore()
    replay_into(store, [pid])
    return pid, store.trace(pid), canonical_nquads(store, pid, provenance=True)


def canonical(running: Running, pid: str) -> str:
    store = open_store(endpoint=running.url)
    try:
        assert store.papers() == [pid]  # no staging or journal graph shows as a paper
        return canonical_nquads(store, pid, provenance=True)
    finally:
        store.close()


@pytest.mark.parametrize("moment", ["staging", "swap"])
def test_server_killed_mid_replay_leaves_the_paper_old_or_new(running, largest, moment,
                                                              monkeypatch):
    pid, records, new = largest
    monkeypatch.setenv("KGCTL_ENDPOINT_MAX_QUADS", SMALL_BATCH)
    store = open_store(endpoint=running.url)
    replay(store, records[: len(records) // 2])  # the old paper: its first half of calls
    old = canonical_nquads(store, pid, provenance=True)
    store.close()
    assert old != new

    proxy, url = running.proxied()
    updates: list[bytes] = []

    def before(body: bytes) -> bool:
        if not body.startswith(b"query="):
            updates.append(body)
            if moment == "staging" and len(updates) == 4:  # the third batch of the paper
                running.kill()
        return False

    def after(body: bytes) -> bool:
        if moment == "swap" and b"INSERT { GRAPH" in body:  # committed, answer not yet sent
            running.kill()
            return True
        return False

    proxy.before, proxy.after = before, after
    remote = open_store(endpoint=url)
    try:
        with pytest.raises(StoreError, match="cannot reach"):
            replay(remote, records)
    finally:
        remote.close()
        proxy.stop()
    assert len(updates) > 4  # the kill came in the middle of a many-request replay
    running.restart()
    if moment == "swap":
        assert canonical(running, pid) == new
        return
    assert canonical(running, pid) == old
    again = open_store(endpoint=running.url)
    replay(again, records)  # and the interrupted replay can simply be run again
    again.close()
    assert canonical(running, pid) == new


def test_lost_answers_reuse_no_iri_and_merge_nothing(running, monkeypatch):
    papers = sorted(traces_by_paper(), key=lambda p: traces_by_paper()[p].stat().st_size)[:2]
    local = EmbeddedStore()
    replay_into(local, papers)
    store = open_store(endpoint=running.url)
    for pid in store.papers():
        store.drop(pid)
    store.close()
    proxy, url = running.proxied(drop_every=DROP_EVERY)
    remote = open_store(endpoint=url)
    try:
        write_call_by_call(remote, papers)
        # answers were really lost, of reads and of committed writes
        assert proxy.dropped == proxy.answers // DROP_EVERY >= 2
        assert proxy.dropped_updates >= 1
        for pid in papers:  # same graph: no IRI minted twice, no entity merged into another
            assert canonical_nquads(remote, pid) == canonical_nquads(local, pid)
            assert len(remote.trace(pid)) == len(local.trace(pid))
    finally:
        remote.close()
        proxy.stop()


def write_call_by_call(store, papers: list[str]) -> None:
    """The papers' bundled traces written one call (one transaction) at a time by the tools'
    handler, as an agent's MCP session writes them (a replay writes a paper at once)."""
    _compiled, (ir, surface), _plan = compile_all()
    engine = Instantiator(ir, store, surface=surface)
    for pid in papers:
        _, calls = load_calls(traces_by_paper()[pid])
        refused = [c.tool for c in calls
                   if run_tool(lambda: engine, c.tool, pid, c.arguments).is_error]
        assert refused == []
