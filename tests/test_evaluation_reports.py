"""Reports say what they measured: the demo's round trip is never shown as an extraction score;
the caseless/1 scorer reproduces the published protocol's arithmetic on the documented example;
`kgctl eval score` fails on missing or unreadable inputs; the extraction run report."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from agent_helpers import DATA, NO_CHEMISTRY, FakeLLM, Reply
from click.testing import CliRunner
from grounding_helpers import build_small_reference

from kgctl.assets import asset_dir
from kgctl.cli import cli
from kgctl.evaluation.scorer import f1

ROUND_TRIP = "round trip of ground-truth traces (ceiling of ontology + tools + queries)"
BUNDLED = asset_dir("domains") / "mop30" / "benchmark" / "traces"
DEMO_PAPER = "10.1021_acs.cgd.6b00306"  # the smallest bundled trace

# docs/evaluation.md, "The caseless/1 scorer": the worked example
GOLD_CBU = {"synthesisProcedures": [
    {"mopCCDCNumber": "100", "cbuFormula1": "[Cu2(CO2)4]", "cbuFormula2": "[(C6H3)2(CO2)4]"},
    {"mopCCDCNumber": "200", "cbuFormula1": "[V6O6(OCH3)9(VO4)]", "cbuFormula2": "[PhPO3]"},
]}
PRED_CBU = {"synthesisProcedures": [
    {"mopCCDCNumber": "100", "cbuFormula1": "[cu2(co2)4]", "cbuFormula2": "[(C12H6)(CO2)4]"},
    {"mopCCDCNumber": "200", "cbuFormula1": "[V7O10(OCH3)9]", "cbuFormula2": "[Zn4O]"},
    {"mopCCDCNumber": "300", "cbuFormula1": "[Fe3O]"},
]}
EMPTY = {"steps": {"Synthesis": []}, "chemicals": {"synthesisProcedures": []},
         "characterisation": {"Devices": []}}


def _records(root: Path, cbu: dict) -> Path:
    for category, doc in {**EMPTY, "cbu": cbu}.items():
        (root / category).mkdir(parents=True)
        (root / category / "p1.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


def _figures(summary: dict) -> tuple:
    return (summary["tp"], summary["fp"], summary["fn"], round(summary["precision"], 4),
            round(summary["recall"], 4), round(summary["f1"], 4))


def test_caseless_reproduces_the_published_arithmetic(tmp_path: Path) -> None:
    gold, pred = _records(tmp_path / "gold", GOLD_CBU), _records(tmp_path / "pred", PRED_CBU)
    result = CliRunner().invoke(cli, ["eval", "score", "--gold", str(gold), "--pred", str(pred),
                                      "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["source"] == f"records scored as given ({pred})"
    caseless = data["compatible"]
    assert caseless["scorer"] == "caseless/1" and data["scorer"] == "strict/1"
    # by hand: 3 formulas agree in written form, [Zn4O] and [Fe3O] are FP, [PhPO3] is FN
    assert _figures(caseless["categories"]["cbu"]) == (3, 2, 1, 0.6, 0.75, 0.6667)
    # an empty category is 0/0: the published arithmetic gives 0.0, ours 1.0
    assert _figures(caseless["categories"]["steps"]) == (0, 0, 0, 0.0, 0.0, 0.0)
    assert _figures(data["categories"]["steps"]) == (0, 0, 0, 1.0, 1.0, 1.0)
    # the aggregate pools the four categories' counts
    assert _figures(caseless["micro"]) == (3, 2, 1, 0.6, 0.75, 0.6667)
    # strict: case and written forms differ (4 x FP+FN); CCDC numbers count (2 TP, 1 FP)
    assert _figures(data["categories"]["cbu"])[:3] == (2, 6, 4)
    # the published micro F1 follows from its P and R under the same arithmetic
    assert round(f1(0.844, 0.808), 3) == 0.826


def test_score_fails_on_missing_or_unreadable_inputs(tmp_path: Path) -> None:
    gold = _records(tmp_path / "gold", GOLD_CBU)
    missing = CliRunner().invoke(cli, ["eval", "score", "--gold", str(gold),
                                       "--pred", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.output.startswith("error: no such pred folder")
    corrupt = tmp_path / "corrupt"
    for category in ("steps", "chemicals", "characterisation", "cbu"):
        (corrupt / category).mkdir(parents=True)
        (corrupt / category / "p1.json").write_text("{not json", encoding="utf-8")
    for args in (["--gold", str(gold), "--pred", str(corrupt)],
                 ["--gold", str(corrupt), "--pred", str(gold)]):
        result = CliRunner().invoke(cli, ["eval", "score", *args])
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error: no readable") and "F1" not in result.output
    partly = _records(tmp_path / "partly", PRED_CBU)
    (partly / "cbu" / "p1.json").write_text("[1, 2", encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "score", "--gold", str(gold), "--pred",
                                      str(partly)])
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: 1 input file(s) could not be read")
    assert "problem: " in result.output and "Traceback" not in result.output
    unwritable = CliRunner().invoke(cli, ["eval", "score", "--gold", str(gold), "--pred",
                                          str(gold), "--html", str(tmp_path / "no" / "r.html")])
    assert unwritable.exit_code == 2
    assert unwritable.output.startswith("error: cannot write") and "Traceback" not in \
        unwritable.output


def test_demo_says_round_trip_and_ceiling_everywhere(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KGCTL_CACHE", str(tmp_path / "cache"))  # the label index of the test
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(BUNDLED / f"{DEMO_PAPER}.jsonl", traces)
    reference = build_small_reference(tmp_path / "reference" / "store")
    workdir = tmp_path / "demo"
    args = ["demo", "--traces", str(traces), "--workdir", str(workdir),
            "--reference", str(reference)]
    as_json = CliRunner().invoke(cli, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert next(iter(data)) == "source" and data["source"] == ROUND_TRIP
    assert data["scores"]["compatible"]["scorer"] == "caseless/1"
    grounding = data["grounding"]
    assert sum(grounding["by_method"].values()) == grounding["grounded"]
    assert len(grounding["ungrounded"]) <= grounding["entities"] - grounding["grounded"]
    assert data["dedup"] and all(s["mentions"] >= s["clusters"] for s in data["dedup"])
    report = json.loads((workdir / "report.json").read_text(encoding="utf-8"))
    assert next(iter(report)) == "source" and report["source"] == ROUND_TRIP
    assert report["provenance"]["kind"] == "round_trip"
    assert {f["name"] for f in report["provenance"]["ontology"]} >= {"ontosynthesis.ttl"}
    page = (workdir / "report.html").read_text(encoding="utf-8")
    body = page.split("<body>", 1)[1]
    first = re.sub(r"<[^>]+>", "", body.split("</p>", 1)[0]).strip()
    assert first == ROUND_TRIP
    assert "<h2>Grounding</h2>" in page and "<h2>Deduplication across papers</h2>" in page
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    lines = [line for line in text.stdout.splitlines() if line.strip()]  # phases: stderr
    assert lines[0].startswith(f"source: {ROUND_TRIP} · kgctl ")
    assert "round-trip ceiling, not an extraction score" in text.output
    for output in (as_json.output, page, text.output):
        assert "extraction by" not in output and "accuracy" not in output.lower()


def test_replayed_run_traces_are_named_as_extraction(tmp_path: Path) -> None:
    from kgctl.pipeline.demo import trace_source

    trace = tmp_path / "p.trace.json"
    trace.write_text(json.dumps({"format": "kgctl-agent-trace/1", "paper_id": "p",
                                 "model": "qwen", "base_url": "http://127.0.0.1:1/v1"}))
    assert trace_source([trace]).headline == "extraction by qwen on http://127.0.0.1:1/v1"
    copied = tmp_path / f"{DEMO_PAPER}.jsonl"
    copied.write_text((BUNDLED / f"{DEMO_PAPER}.jsonl").read_text(encoding="utf-8") + "\n")
    assert trace_source([copied]).kind == "replay"  # changed: no longer the bundled trace


@pytest.fixture
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "KGCTL_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_run_report_counts_turns_refusals_and_repairs(tmp_path: Path, no_llm_env: None) -> None:
    paper = tmp_path / "paper.md"
    shutil.copy(DATA / "paper.md", paper)
    good = json.dumps({"label": "MOP-1", "chemical_output": {"label": "MOP-1"}})
    script = [Reply(tool_calls=[("create_chemical_synthesis", "{not json")]),
              Reply(tool_calls=[("create_chemical_synthesis", good)])]
    prices = tmp_path / "prices.yaml"
    prices.write_text("m: {input: 1.0, output: 2.0}\n", encoding="utf-8")
    store, runs = tmp_path / "store", tmp_path / "runs"
    with FakeLLM(script, default=Reply(content="done")) as fake:
        result = CliRunner().invoke(cli, [
            "extract", str(paper), "--store", str(store), "--runs", str(runs), "--model", "m",
            "--base-url", fake.base_url, "--prices", str(prices), *NO_CHEMISTRY],
            env={"OPENAI_API_KEY": "k"})
        requests = len(fake.requests)
    assert result.exit_code == 0, result.output
    written = json.loads((runs / "run-report.json").read_text(encoding="utf-8"))
    assert (runs / "run-report.html").read_text(encoding="utf-8").count("<img") == 2
    again = CliRunner().invoke(cli, ["eval", "runs", str(runs), "--store", str(store), "--json"])
    assert again.exit_code == 0, again.output
    data = json.loads(again.output)
    assert data["source"] == f"extraction by m on {fake.base_url}"
    assert {f["name"] for f in written["provenance"]["ontology"]} >= {"ontosynthesis.ttl"}
    assert data["papers"] == written["papers"]
    core = data["papers"][0]["steps"][0]
    assert (core["step"], core["accepted"], core["refused"], core["repaired"]) == \
        ("core", 1, 1, 1)
    assert core["refused_by_code"] == {"malformed_arguments": 1}
    batch = data["batch"]
    assert batch["turns"] == requests  # one assistant message per request
    assert (batch["prompt_tokens"], batch["completion_tokens"]) == (100 * requests,
                                                                     20 * requests)
    assert batch["cost_usd"] == pytest.approx((100 * 1.0 + 20 * 2.0) * requests / 1e6)
    assert batch["triples"] > 0 and batch["by_status"] == {"complete": 1}
    empty = CliRunner().invoke(cli, ["eval", "runs", str(tmp_path)])
    assert empty.exit_code == 2 and empty.output.startswith("error: no run traces")


@pytest.mark.skipif(shutil.which("/usr/bin/chromium") is None,
                    reason="Debian chromium not installed at /usr/bin/chromium")
def test_per_paper_table_sorts_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    gold, pred = _records(tmp_path / "gold", GOLD_CBU), _records(tmp_path / "pred", PRED_CBU)
    for root in (gold, pred):  # a second paper, perfect on both sides
        for category in ("steps", "chemicals", "characterisation", "cbu"):
            shutil.copy(gold / category / "p1.json", root / category / "p2.json")
    page_file = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["eval", "score", "--gold", str(gold), "--pred", str(pred),
                                      "--html", str(page_file)])
    assert result.exit_code == 0, result.output
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            first = page.locator("#papers tbody tr td:first-child")
            assert first.all_inner_texts() == ["p1", "p2"]
            page.locator("#papers th", has_text="micro F1").click()
            assert first.all_inner_texts() == ["p1", "p2"]  # ascending: p1 is the worse
            page.locator("#papers th", has_text="micro F1").click()
            assert first.all_inner_texts() == ["p2", "p1"]
        finally:
            browser.close()


def test_llm_demo_names_the_model_and_server(tmp_path: Path, no_llm_env: None) -> None:
    paper = tmp_path / f"{DEMO_PAPER}.md"  # a MOP-30 paper id, so the demo can score it
    shutil.copy(DATA / "paper.md", paper)
    good = json.dumps({"label": "MOP-1", "chemical_output": {"label": "MOP-1"}})
    workdir = tmp_path / "demo"
    with FakeLLM([Reply(tool_calls=[("create_chemical_synthesis", good)])],
                 default=Reply(content="done")) as fake:
        result = CliRunner().invoke(cli, ["demo", "--llm", str(paper), "--workdir", str(workdir),
                                          "--model", "m", "--base-url", fake.base_url],
                                    env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    expected = f"extraction by m on {fake.base_url}"
    assert f"source: {expected} · kgctl " in result.output and "round trip" not in result.output
    report = json.loads((workdir / "report.json").read_text(encoding="utf-8"))
    assert report["source"] == expected
    runs = json.loads((workdir / "runs" / "run-report.json").read_text(encoding="utf-8"))
    assert runs["source"] == expected and runs["batch"]["accepted"] == 1
