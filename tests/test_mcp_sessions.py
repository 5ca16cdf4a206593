"""Several clients share one instantiation server over streamable HTTP: each session keeps its
own paper, concurrent writers of one paper get distinct IRIs, and the engine stays consistent
when two of them write one paper from different threads."""

from __future__ import annotations

import json
import threading

import anyio
from mcp import Client
from mcp_helpers import SYNTHESES, http_server, write_syntheses

from kgctl.compiler import compile_tools
from kgctl.instantiation.engine import Instantiator
from kgctl.ontology import default_ir
from kgctl.store import EmbeddedStore

SESSIONS = 4
WRITES = 6


def _labels(paper: str, store: EmbeddedStore) -> list[str]:
    rows = store.query("SELECT ?l WHERE { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l "
                       "FILTER(STRSTARTS(?l, 'syn ')) }", paper_id=paper)
    return sorted(r["l"].value for r in rows if not r["l"].value.endswith("product"))


def test_http_sessions_keep_their_own_paper_and_one_paper_gets_unique_iris(tmp_path):
    path = tmp_path / "kg"
    papers = [f"paper-{i}" for i in range(SESSIONS)]
    wanted = {p: [f"syn {p} {n}" for n in range(WRITES)] for p in papers}
    shared = [[f"syn shared {s} {n}" for n in range(WRITES)] for s in range(SESSIONS)]
    results: dict[str, list] = {}

    async def main(url: str) -> None:
        async with anyio.create_task_group() as group:
            for paper in papers:
                async def own(paper: str = paper) -> None:
                    results[paper] = await write_syntheses(url, paper, wanted[paper])
                group.start_soon(own)
            for s, labels in enumerate(shared):
                async def same(s: int = s, labels: list[str] = labels) -> None:
                    results[f"shared-{s}"] = await write_syntheses(url, "shared", labels)
                group.start_soon(same)
        # a client of the stateless protocol has no session: it cannot write to a paper
        async with Client(url, mode="2026-07-28") as stateless:
            await stateless.call_tool("select_paper", {"paper_id": "paper-0"})
            refused = await stateless.call_tool("create_chemical_synthesis", {"label": "lost"})
            assert refused.is_error and json.loads(refused.content[0].text)["code"] == "no_paper"

    with http_server(["mcp", "serve", "--store", str(path)]) as url:
        anyio.run(main, url)
    assert len(results) == 2 * SESSIONS
    store = EmbeddedStore(path)
    try:
        for paper in papers:
            assert {r["paper"] for r in results[paper]} == {paper}
            assert _labels(paper, store) == sorted(wanted[paper]), paper
            assert len(store.trace(paper)) == WRITES
        iris = [r["iris"][0] for s in range(SESSIONS) for r in results[f"shared-{s}"]]
        assert len(set(iris)) == SESSIONS * WRITES
        assert len(list(store.query(SYNTHESES, paper_id="shared"))) == SESSIONS * WRITES
        assert _labels("shared", store) == sorted(label for ls in shared for label in ls)
        assert len(store.trace("shared")) == SESSIONS * WRITES
    finally:
        store.close()


def test_two_instantiators_on_one_store_never_merge_entities():
    store, ir = EmbeddedStore(), default_ir()
    surface = compile_tools(ir)
    engines = [Instantiator(ir, store, surface=surface) for _ in range(SESSIONS)]
    errors: list[BaseException] = []

    def write(engine: Instantiator, n: int) -> None:
        try:
            for i in range(WRITES):
                engine.call("create_chemical_synthesis", "p1", {
                    "label": f"syn {n} {i}", "chemical_output": {"label": f"out {n} {i}"}})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(e, n)) for n, e in enumerate(engines)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(list(store.query(SYNTHESES, paper_id="p1"))) == SESSIONS * WRITES
    assert [r.seq for r in store.trace("p1")] == list(range(1, SESSIONS * WRITES + 1))
