"""Domain packs end to end, through the CLI and a local fake OpenAI-compatible server:
the nerre-doping pack extracts its abstracts and is scored by `kgctl eval nerre`; a pack made
by `kgctl domain new` from a third-party T-Box alone (SOSA) extracts, deduplicates, is
evaluated and served by `kgctl query serve`, with no file written by hand."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from agent_helpers import FakeLLM, Reply, any_tbox_model
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from kgctl.cli import cli
from kgctl.packs import load_pack, read_manifest

SOSA = Path(__file__).parent / "ontologies" / "sosa" / "sosa.ttl"
FIRST_DOI_PAPER = "10.1007_s10853-017-1104-8"  # sentence [0]: ZnO films doped with Al, Ga, In


def _doping_model(request: dict) -> Reply:
    """Writes one doping (Al in ZnO, sentence 0) when the step offers create_doping."""
    if any(m.get("role") == "tool" for m in request["messages"]):
        return Reply(content="done")
    names = {t["function"]["name"] for t in request.get("tools") or ()}
    if "create_doping" in names:
        args = {"dopant": {"label": "Al", "mentioned_in": [{"sentence_number": 0}]},
                "host": {"label": "ZnO", "mentioned_in": [{"sentence_number": 0}]},
                "stated_in": {"sentence_number": 0}}
        return Reply(tool_calls=[("create_doping", json.dumps(args))])
    return Reply(content="done")


def _env(fake: FakeLLM) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "test",
            "KGCTL_MODEL": "fake-model"}


def _run(args: list[str], env: dict[str, str], code: int = 0) -> str:
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == code, (args, result.output, result.exception)
    return result.output


def test_nerre_doping_extract_then_score(tmp_path):
    pack = load_pack("nerre-doping")
    _, benchmark = pack.benchmark()
    papers = sorted((pack.root / benchmark.papers).glob("*.txt"))
    assert len(papers) == 31
    chosen = [p for p in papers if p.stem == FIRST_DOI_PAPER] + papers[:1]
    with FakeLLM([], default=_doping_model) as fake:
        _run(["extract", "--domain", "nerre-doping", *map(str, chosen),
              "--store", str(tmp_path / "kg"), "--runs", str(tmp_path / "runs")], _env(fake))
    out = _run(["eval", "nerre", "--domain", "nerre-doping", "--store", str(tmp_path / "kg"),
                "--out", str(tmp_path / "pred.json"), "--json"], {})
    scores = json.loads(out)
    assert set(scores) == {"store", "gpt3", "llama2"}
    assert scores["store"]["links"]["tp"] >= 1  # ZnO <- Al of sentence 0 read back
    assert scores["gpt3"]["links"]["tp"] > scores["store"]["links"]["tp"]
    pred = json.loads((tmp_path / "pred.json").read_text())
    assert len(pred) == 31 and pred[0]["doping_sentences"][0]["entity_graph_raw"]["basemats"]


def test_pack_from_a_third_party_tbox_alone(tmp_path):
    pack_dir = tmp_path / "station"
    _run(["domain", "new", "station", "--ontology", str(SOSA), "--dir", str(pack_dir)], {})
    assert sorted(p.name for p in pack_dir.rglob("*") if p.is_file()) == [
        "domain.yaml", "sosa.ttl"]
    assert read_manifest(pack_dir).ontologies == ("ontologies/sosa.ttl",)
    _run(["domain", "check", str(pack_dir)], {})
    paper = tmp_path / "station.txt"
    paper.write_text("Methods\nA weather station observed the air temperature hourly.\n")
    store, runs = tmp_path / "kg", tmp_path / "runs"
    with FakeLLM([], default=any_tbox_model) as fake:
        _run(["extract", str(paper), "--domain", str(pack_dir), "--store", str(store),
              "--runs", str(runs)], _env(fake))
    second = tmp_path / "station-2.txt"
    shutil.copy(paper, second)
    with FakeLLM([], default=any_tbox_model) as fake:
        _run(["extract", str(second), "--domain", str(pack_dir), "--store", str(store),
              "--runs", str(runs)], _env(fake))
    dedup = json.loads(_run(["dedup", "--store", str(store), "--domain", str(pack_dir),
                             "--dry-run", "--json"], {}))
    assert dedup and sum(s["cross_paper_clusters"] for s in dedup) >= 1  # derived specs
    report = json.loads(_run(["eval", "runs", str(runs), "--store", str(store), "--json"], {}))
    assert len(report["papers"]) == 2
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from kgctl.cli import main; main()", "query", "serve", "--store", str(store),
        "--domain", str(pack_dir)], env=dict(os.environ))

    async def serve() -> tuple[list[str], str]:
        async with Client(params) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            listed = await client.call_tool("list_templates", {})
            return tools, json.dumps(listed.structured_content)

    tools, templates = anyio.run(serve)
    assert "list_templates" in tools and "sosa:" in templates


@pytest.mark.parametrize("bad", ["no-such-pack", "/no/such/folder"])
def test_an_unknown_domain_is_one_error(bad):
    result = CliRunner().invoke(cli, ["domain", "check", bad])
    assert result.exit_code == 2 and result.output.count("error:") == 1
