"""`kgctl extract` and `kgctl demo` through the CLI: batch runs against a scripted LLM server,
resume after interruption, clear messages when no LLM is configured, the replay demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_helpers import NO_CHEMISTRY, FakeLLM, Reply, build_original, write_pdf
from click.testing import CliRunner
from grounding_helpers import build_small_reference, iri

from kgctl.agent.trace import AgentTrace
from kgctl.cli import cli
from kgctl.store import EmbeddedStore, canonical_nquads

DATA = Path(__file__).parent / "data" / "agent"
LLM_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "KGCTL_MODEL")


@pytest.fixture
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)


def _synthesis_call(request: dict) -> Reply:
    """Write one synthesis named after the paper on the first turn of the first step, then stop
    (whatever order the parallel papers' requests come in)."""
    offered = {t["function"]["name"] for t in request.get("tools", [])}
    if len(request["messages"]) != 2 or "create_chemical_synthesis" not in offered:
        return Reply(content="nothing more")
    text = request["messages"][1]["content"]
    label = "MOP-A" if "Paper paper_a" in text else "MOP-B"
    return Reply(tool_calls=[("create_chemical_synthesis",
                              json.dumps({"label": label, "chemical_output": {"label": label}}))])


def test_a_pdf_without_an_llm_says_what_to_set(tmp_path: Path, no_llm_env: None) -> None:
    pdf = write_pdf(tmp_path / "paper.pdf", [["Experimental Section", "Cu was added."]])
    for args in (["extract", str(pdf)], ["demo", "--llm", str(pdf)]):
        result = CliRunner().invoke(cli, [*args, "--store", str(tmp_path / "s")]
                                    if args[0] == "extract" else
                                    [*args, "--workdir", str(tmp_path / "demo")])
        assert result.exit_code == 2, result.output
        assert "no LLM configured" in result.output
        assert "OPENAI_BASE_URL" in result.output and "KGCTL_MODEL" in result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "s").exists() and not (tmp_path / "demo").exists()  # nothing made


def test_bad_paper_is_one_error_line(tmp_path: Path, no_llm_env: None) -> None:
    bad = tmp_path / "scan.pdf"
    bad.write_bytes(b"%PDF-1.4 nonsense")
    result = CliRunner().invoke(cli, ["extract", str(bad), "--store", str(tmp_path / "s")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}: not a readable PDF")


def test_batch_extracts_in_parallel_and_resumes(tmp_path: Path, no_llm_env: None) -> None:
    papers = []
    for name in ("paper_a", "paper_b"):
        path = tmp_path / f"{name}.md"
        path.write_text((DATA / "paper.md").read_text(encoding="utf-8"), encoding="utf-8")
        papers.append(str(path))
    store_dir, runs = tmp_path / "store", tmp_path / "runs"
    args = ["extract", *papers, "--store", str(store_dir), "--runs", str(runs), "--model", "m",
            "--workers", "2", "--json", *NO_CHEMISTRY]
    with FakeLLM([], default=_synthesis_call) as fake:
        first = CliRunner().invoke(cli, [*args, "--base-url", fake.base_url])
    assert first.exit_code == 0, first.output
    summary = {s["paper_id"]: s for s in json.loads(first.stdout)}
    assert {p: (s["outcome"], s["accepted"]) for p, s in summary.items()} == {
        "paper_a": ("complete", 1), "paper_b": ("complete", 1)}
    assert summary["paper_a"]["prompt_tokens"] > 0
    store = EmbeddedStore(store_dir)
    graphs = {p: canonical_nquads(store, p) for p in ("paper_a", "paper_b")}
    store.close()
    assert '"MOP-A"' in graphs["paper_a"] and '"MOP-B"' not in graphs["paper_a"]
    assert '"MOP-B"' in graphs["paper_b"]  # each paper wrote only its own graph

    # interrupt paper_b: its trace says running; a rerun skips paper_a and redoes paper_b
    trace_b = AgentTrace.load(runs / "paper_b.trace.json")
    trace_b.status = "running"
    trace_b.steps = trace_b.steps[:1]
    trace_b.save(runs / "paper_b.trace.json")
    with FakeLLM([], default=_synthesis_call) as fake:
        second = CliRunner().invoke(cli, [*args, "--base-url", fake.base_url])
    assert second.exit_code == 0, second.output
    outcomes = {s["paper_id"]: s["outcome"] for s in json.loads(second.stdout)}
    assert outcomes == {"paper_a": "skipped", "paper_b": "complete"}
    assert all("Paper paper_b" in r["messages"][1]["content"] for r in fake.requests
               if len(r["messages"]) == 2)
    store = EmbeddedStore(store_dir)
    try:  # the redone paper has exactly the graph of a clean run
        assert canonical_nquads(store, "paper_b") == graphs["paper_b"]
        assert len(store.trace("paper_b")) == 1
    finally:
        store.close()
    # the run's own trace replays into the same graph
    replayed = tmp_path / "replayed"
    result = CliRunner().invoke(cli, ["extract", "--replay", str(runs / "paper_b.trace.json"),
                                      "--store", str(replayed)])
    assert result.exit_code == 0, result.output
    store = EmbeddedStore(replayed)
    try:
        assert canonical_nquads(store, "paper_b") == graphs["paper_b"]
    finally:
        store.close()


def test_demo_without_traces_fails_clearly(tmp_path: Path) -> None:
    empty = tmp_path / "traces"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["demo", "--traces", str(empty),
                                      "--workdir", str(tmp_path / "demo")])
    assert result.exit_code == 2
    assert "no demo traces" in result.output and "kgctl demo --llm" in result.output


def test_demo_replays_evaluates_and_reports(tmp_path: Path) -> None:
    """The demo pipeline on one MOP-30 paper's trace (the bundled 30 are used by default)."""
    from kgctl.store.trace import trace_jsonl

    paper = "10.1021_ic050460z"
    store = EmbeddedStore(None)
    build_original(store, paper)
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / f"{paper}.jsonl").write_text(trace_jsonl(store.trace(paper)), encoding="utf-8")
    workdir = tmp_path / "demo"
    # a small prebuilt reference, not the full 74k species
    reference = build_small_reference(tmp_path / "reference" / "store")
    result = CliRunner().invoke(cli, ["demo", "--traces", str(traces), "--workdir", str(workdir),
                                      "--reference", str(reference), "--json"],
                               env={"KGCTL_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["papers"], data["calls"], data["refused"]) == (1, 6, 0)
    grounding = data["grounding"]
    assert grounding["built"] is False and grounding["entities"] > 0
    assert 0 < grounding["grounded"] <= grounding["entities"]
    demo_store = EmbeddedStore(workdir / "store")
    links = list(demo_store.query(
        "SELECT ?e ?r WHERE { ?e <http://www.w3.org/2002/07/owl#sameAs> ?r }", paper_id=paper))
    demo_store.close()
    assert len(links) == grounding["grounded"]
    assert all(r["r"].value.startswith(iri("")) for r in links)
    micro = data["scores"]["micro"]
    assert micro["tp"] + micro["fn"] > 0  # the paper's ground truth was scored
    html = (workdir / "report.html").read_text(encoding="utf-8")
    assert "<img" in html and "base64" in html
    text = CliRunner().invoke(cli, ["demo", "--traces", str(traces), "--workdir", str(workdir)],
                              env={"KGCTL_REFERENCE": str(reference),
                                   "KGCTL_CACHE": str(tmp_path / "cache")})
    assert text.exit_code == 0, text.output
    assert f"grounded {grounding['grounded']} of {grounding['entities']} entities" in text.output
    assert "mop30 scores (1 papers)" in text.output and "kgctl serve --store" in text.output
    phases = [line.removesuffix(" ...") for line in text.stderr.splitlines()
              if line.endswith(" ...")]  # announced as they start, longest included
    assert [p.split()[0] for p in phases] == ["compiling", "replaying", "reading", "indexing",
                                              "grounding", "deduplicating", "merging"], phases
    assert not [line for line in result.stderr.splitlines() if line.endswith(" ...")]  # --json


@pytest.mark.parametrize("verbose", [False, True])
def test_a_model_that_calls_no_tool_ends_in_nothing_extracted(tmp_path: Path, verbose: bool
                                                              ) -> None:
    """Through the installed command (a subprocess, so logging is as a user sees it)."""
    store, runs = tmp_path / "store", tmp_path / "runs"
    args = [sys.executable, "-c", "from kgctl.cli import main; main()", "extract",
            str(DATA / "paragraph.md"), "--store", str(store), "--runs", str(runs),
            "--model", "m", "--max-tokens", "300", *NO_CHEMISTRY, *(["-v"] if verbose else [])]
    with FakeLLM([], default=Reply(content="The paragraph describes a synthesis."),
                 context_window=100_000) as fake:
        done = subprocess.run([*args, "--base-url", fake.base_url], capture_output=True,
                              text=True, timeout=120, env=os.environ | {"NO_COLOR": "1"})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "error: nothing extracted from 1 of 1 papers (paragraph)" in done.stderr
    assert "warning: step core wrote nothing: the model called no graph tool" in done.stderr
    assert "steps that wrote nothing: core: empty" in done.stdout
    assert ("HTTP Request:" in done.stderr) is verbose  # per-request logs only with -v
    assert {r["max_tokens"] for r in fake.requests} == {300}
    trace = AgentTrace.load(runs / "paragraph.trace.json")
    assert trace.status == "complete" and all(s.status == "empty" for s in trace.steps)
    assert {s.context_window for s in trace.steps} == {100_000}  # read from the server
    assert len(trace.steps) == len(fake.requests)  # one turn per step, no verification passes


def test_the_demo_writes_the_store_every_command_reads_by_default() -> None:
    from kgctl.cli import load_command
    from kgctl.store.commands import DEFAULT_STORE

    workdir = next(p for p in load_command("demo").params if p.name == "workdir")
    assert Path(workdir.default) / "store" == DEFAULT_STORE
