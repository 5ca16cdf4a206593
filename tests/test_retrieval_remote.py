"""The paper of an entity on the remote backend: the query tools over a real `oxigraph serve`
(the union of the paper graphs is the default graph there; GRAPH ?paper must still see them)."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from retrieval_helpers import SOSA, SOSA_TBOX, mop30_store, sosa_engine
from store_helpers import OxigraphServer
from virtuoso_helpers import VirtuosoServer, missing_reason

from kgctl.ontology.loader import default_ir, load_ir
from kgctl.packs import load_pack
from kgctl.retrieval.benchmark import evaluate, load_questions
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.server import build_server
from kgctl.store import open_store

PAPERS = ("10.1039_C5DT04764A", "10.1021_acsami.8b02015")
PER_PAPER = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
SELECT ?g (COUNT(DISTINCT ?s) AS ?n) WHERE { GRAPH ?g { ?s a ontosyn:ChemicalSynthesis } }
GROUP BY ?g"""


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    server = OxigraphServer(tmp_path_factory.mktemp("oxigraph"))
    try:
        store = open_store(endpoint=server.url)
        for paper in PAPERS:
            store.import_data(mop30_store().export(paper_id=paper))
        yield store
    finally:
        server.stop()


def test_paper_of_an_entity_on_a_remote_store(remote):
    expected = sorted((r["g"].value, r["n"].value) for r in remote.query(PER_PAPER, union=True))
    server = build_server(QueryEngine(remote, default_ir(),
                                      templates=load_pack().part("templates")))

    async def main():
        async with Client(server, mode="legacy") as client:
            made = await client.call_tool("new_query", {"template": "synthesis"})
            q = made.structured_content["query_id"]
            for tool, args in (("add_provenance", {"variable": "synthesis", "name": "paper"}),
                               ("group_by", {"variables": ["paper"]}),
                               ("aggregate", {"function": "COUNT", "variable": "synthesis",
                                              "distinct": True})):
                result = await client.call_tool(tool, {"query_id": q, **args})
                assert not result.is_error, result.structured_content
            answer = await client.call_tool("execute_query", {"query_id": q})
            return sorted(tuple(r) for r in answer.structured_content["rows"])

    rows = anyio.run(main)
    assert [g for g, _ in expected] == [f"https://w3id.org/kgctl/paper/{p}" for p in sorted(PAPERS)]
    assert rows == expected


@pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))
def test_sosa_questions_on_virtuoso(tmp_path, monkeypatch):
    """Mining, typed comparisons and casts in the SPARQL every engine runs: the SOSA set on a
    real Virtuoso gives the reference answers (it fails a whole query on a failed cast, does not
    short-cut &&, and compares IRIs with date-times)."""
    server = VirtuosoServer(tmp_path)
    try:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        store = open_store(endpoint=server.url)
        store.import_data(sosa_engine().store.export())
        engine = QueryEngine(store, load_ir(SOSA_TBOX, profile_paths=[]), templates=None)
        report = evaluate(engine, load_questions(SOSA / "questions.yaml"))
        assert report.questions == 22 and report.not_constructible == {}
    finally:
        server.stop()
