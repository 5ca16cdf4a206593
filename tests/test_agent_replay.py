"""Replay re-issues a recorded trace through the compiled tools (in process, with the checks of
an MCP call): the graph, the trace and every refusal come back as an MCP session makes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import build_original
from click.testing import CliRunner
from mcp import Client
from mcp_types import TextContent

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import load_calls, replay_traces
from kgctl.cli import cli
from kgctl.errors import InputError
from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir
from kgctl.store import EmbeddedStore, canonical_nquads
from kgctl.store.trace import trace_jsonl

DATA = Path(__file__).parent / "data" / "agent"
PAPER = "10.9999_demo.1"


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    store = EmbeddedStore(None)
    build_original(store, PAPER)
    trace = tmp_path_factory.mktemp("trace") / f"{PAPER}.jsonl"
    trace.write_text(trace_jsonl(store.trace(PAPER)), encoding="utf-8")
    return canonical_nquads(store, PAPER), trace


def test_replay_rebuilds_an_identical_graph(original: tuple[str, Path]) -> None:
    nquads, trace = original
    assert nquads.count("\n") > 20  # a real synthesis, not an empty graph
    fresh = EmbeddedStore(None)
    [report] = run_sync(lambda: replay_traces([trace], ir=default_ir(), store=fresh))
    assert (report.paper_id, report.calls, report.accepted, report.refused) == (PAPER, 6, 6, ())
    assert canonical_nquads(fresh, PAPER) == nquads
    # evidence recorded with the original call is recorded again
    assert fresh.trace(PAPER)[0].evidence.quote == "Synthesis of MOP-1."


def test_replay_cli_and_existing_graphs(original: tuple[str, Path], tmp_path: Path) -> None:
    nquads, trace = original
    store_dir = tmp_path / "store"
    runner = CliRunner()
    result = runner.invoke(cli, ["extract", "--replay", str(trace), "--store", str(store_dir),
                                 "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["accepted"] == 6
    again = runner.invoke(cli, ["extract", "--replay", str(trace), "--store", str(store_dir)])
    assert again.exit_code == 2 and "already have a graph" in again.output
    assert "Traceback" not in again.output
    replaced = runner.invoke(cli, ["extract", "--replay", str(trace), "--store", str(store_dir),
                                   "--replace"])
    assert replaced.exit_code == 0, replaced.output
    store = EmbeddedStore(store_dir)
    try:
        assert canonical_nquads(store, PAPER) == nquads
    finally:
        store.close()


def test_a_refused_call_is_reported_and_the_rest_written(original: tuple[str, Path],
                                                         tmp_path: Path) -> None:
    _, trace = original
    lines = trace.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[-1])
    record["arguments"]["target_temperature"] = {"value": 85, "unit": "furlong"}
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:-1], json.dumps(record)]) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["extract", "--replay", str(broken),
                                      "--store", str(tmp_path / "s")])
    assert result.exit_code == 1, result.output
    assert "1 of 6 calls refused" in result.output and "unit_unknown" in result.output


def test_refusals_and_graph_are_those_of_an_mcp_session(original: tuple[str, Path],
                                                        tmp_path: Path) -> None:
    """Refused calls of every kind (the engine's, an unknown argument, an unknown tool, over
    the limits) give the same feedback and the same graph in process as over MCP."""
    _, trace = original
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    last = records[-1]
    bad = [{**last, "arguments": {**last["arguments"], "target_temperature": {
               "value": 85, "unit": "furlong"}}},
           {**last, "arguments": {**last["arguments"], "colour": "red"}},
           {**last, "tool": "add_stirr"},
           {**last, "arguments": {**last["arguments"], "vessel": "v" * 5000}}]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps({**r, "seq": i}) + "\n"
                              for i, r in enumerate([*records[:-1], *bad, last], start=1)),
                      encoding="utf-8")
    fast = EmbeddedStore(None)
    [report] = run_sync(lambda: replay_traces([broken], ir=default_ir(), store=fast))
    assert [r.position for r in report.refused] == [6, 7, 8, 9]
    mcp_store = EmbeddedStore(None)
    _, calls = load_calls(broken)

    async def over_mcp() -> list[str]:
        async with Client(build_server(default_ir(), mcp_store)) as client:
            await client.call_tool("select_paper", {"paper_id": PAPER})
            results = [await client.call_tool(c.tool, c.arguments) for c in calls]
        return ["\n".join(c.text for c in r.content if isinstance(c, TextContent))
                for r in results if r.is_error]

    assert [r.feedback for r in report.refused] == run_sync(over_mcp)
    assert {json.loads(r.feedback)["code"] for r in report.refused} == {
        "unit_unknown", "unknown_argument", "unknown_tool", "too_large"}
    assert canonical_nquads(fast, PAPER) == canonical_nquads(mcp_store, PAPER)


@pytest.mark.parametrize("content, message", [
    ("", "the trace is empty"), ("not json\n", "not a call record"),
    ('{"format": "kgctl-agent-trace/1", "paper_id": 3}', "not an agent trace")])
def test_bad_trace_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_calls(path)


def test_oracle_traces_replay_to_identical_graphs(tmp_path: Path) -> None:
    """The round-trip oracle's MOP-30 traces (the demo's traces) rebuild the oracle's graphs."""
    from kgctl.assets import asset_dir
    from kgctl.evaluation.oracle import benchmark_papers, run_oracle

    root = asset_dir("domains") / "mop30" / "benchmark"
    papers = benchmark_papers(root)[:5]
    original = EmbeddedStore(None)
    run_oracle(original, root, papers=papers, traces=tmp_path)
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert len(traces) == len(papers)
    fresh = EmbeddedStore(None)
    reports = run_sync(lambda: replay_traces(traces, ir=default_ir(), store=fresh))
    assert sum(r.calls for r in reports) > 100
    assert [r.refused for r in reports] == [()] * len(papers)
    for report in reports:
        assert canonical_nquads(fresh, report.paper_id) == canonical_nquads(
            original, report.paper_id)
        assert _timeless(fresh, report.paper_id) == _timeless(original, report.paper_id)


def _timeless(store: EmbeddedStore, paper: str) -> list[dict]:
    """The paper's call records (deltas, IRIs, arguments, evidence) but their times."""
    return [r.model_dump(exclude={"time"}) for r in store.trace(paper)]


def test_papers_replayed_before_a_failing_trace_are_kept_whole(original: tuple[str, Path],
                                                               tmp_path: Path) -> None:
    """Papers go into the store in batches; a trace that fails at its turn still leaves every
    paper replayed before it in the store, whole, on disk."""
    nquads, trace = original
    first = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({**first, "paper_id": "other"}) + "\n{not json\n",
                      encoding="utf-8")
    store = EmbeddedStore(tmp_path / "store")
    with pytest.raises(InputError, match="broken.jsonl"):
        run_sync(lambda: replay_traces([trace, broken], ir=default_ir(), store=store))
    store.close()
    store = EmbeddedStore(tmp_path / "store")
    try:
        assert store.papers() == [PAPER]
        assert canonical_nquads(store, PAPER) == nquads
    finally:
        store.close()
