"""`--endpoint` through the CLI: import into a token-guarded `kgctl serve` with the token from the
environment, `kgctl query run` and `kgctl eval oracle` against a real `oxigraph serve`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pyoxigraph import RdfFormat
from service_helpers import disk_store, live_server
from store_helpers import OxigraphServer, record, step_triples

from kgctl.cli import cli as main
from kgctl.service.config import ServiceConfig
from kgctl.store import EmbeddedStore, canonical_nquads, open_store

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def oxigraph(tmp_path_factory):
    server = OxigraphServer(tmp_path_factory.mktemp("oxigraph"))
    yield server
    server.stop()


def dataset(tmp_path):
    local = EmbeddedStore()
    for n in range(1, 4):
        local.write("p1", insert=step_triples("p1", n), record=record("p1", n))
    path = tmp_path / "backup.trig"
    path.write_bytes(local.export(format=RdfFormat.TRIG))
    return local, path


def test_import_into_token_guarded_serve_takes_the_token_from_the_environment(tmp_path):
    local, path = dataset(tmp_path)
    served = disk_store()
    runner = CliRunner()
    with live_server(served, ServiceConfig(update_token=TOKEN)) as base:
        args = ["store", "import", str(path), "--endpoint", f"{base}/query"]
        refused = runner.invoke(main, args, env={"KGCTL_ENDPOINT_TOKEN": None})
        assert refused.exit_code == 2
        assert refused.output.startswith("error:") and "401" in refused.output
        assert len(served) == 0
        done = runner.invoke(main, [*args, "--json"], env={"KGCTL_ENDPOINT_TOKEN": TOKEN})
        assert done.exit_code == 0, done.output
        assert json.loads(done.output) == {"imported": ["p1"]}
        remote = open_store(endpoint=f"{base}/query")
        assert canonical_nquads(remote, "p1", provenance=True) == \
            canonical_nquads(local, "p1", provenance=True)
        remote.close()


def test_query_run_and_eval_oracle_take_an_endpoint(oxigraph, tmp_path):
    runner = CliRunner()
    _local, path = dataset(tmp_path)
    assert runner.invoke(main, ["store", "import", str(path), "--endpoint", oxigraph.url]
                         ).exit_code == 0
    query = tmp_path / "q.rq"
    query.write_text("SELECT (COUNT(?s) AS ?n) WHERE { ?s ?p ?o }")
    ran = runner.invoke(main, ["query", "run", str(query), "--endpoint", oxigraph.url, "--json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["rows"] == [["27"]]  # 3 steps x 3 triples + 3 x 6 record quads
    both = runner.invoke(main, ["query", "run", str(query), "--endpoint", oxigraph.url,
                                "--store", str(tmp_path / "s")])
    assert both.exit_code == 2 and both.output.startswith("error:")

    paper = "10.1021_acs.cgd.6b00306"  # the smallest MOP-30 paper
    oracle = runner.invoke(main, ["eval", "oracle", "--endpoint", oxigraph.url, "--paper", paper,
                                  "--json"])
    assert oracle.exit_code == 0, oracle.output
    remote_f1 = json.loads(oracle.output)["micro"]["f1"]
    local = runner.invoke(main, ["eval", "oracle", "--store", str(tmp_path / "local"),
                                 "--paper", paper, "--json"])
    assert remote_f1 == json.loads(local.output)["micro"]["f1"] > 0.5
