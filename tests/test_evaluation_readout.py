"""Read-out through the fixed queries on a hand-made A-Box, and the `kgctl eval` CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kgctl.assets import asset_dir
from kgctl.cli import cli
from kgctl.evaluation.loader import Loaded, load_benchmark
from kgctl.evaluation.readout import read_out, read_out_loaded
from kgctl.evaluation.report import score
from kgctl.store import open_store

DATA = Path(__file__).parent / "data" / "evaluation"
PAPER = "10.1021_acs.cgd.6b00306"
GOLD = asset_dir("benchmarks") / "mop30"
NERRE = asset_dir("benchmarks") / "nerre-doping"


def _store(path: Path | None = None):
    store = open_store(path=path)
    store.import_data((DATA / f"{PAPER}.trig").read_bytes())
    return store


def test_hand_made_graph_reads_back_to_the_ground_truth():
    store = _store()
    records = read_out(store, PAPER)
    steps = records["steps"]["Synthesis"][0]["steps"]
    assert [next(iter(s)) for s in steps] == ["Add"] * 5 + ["Evaporate"]
    assert steps[-1]["Evaporate"]["duration"] == "several weeks"  # qualitative label
    gold = load_benchmark(GOLD)
    gold_paper = Loaded(docs={PAPER: gold.docs[PAPER]})
    report = score(gold_paper, read_out_loaded(store, [PAPER]))
    assert {c: n.f1 for c, n in report.categories.items()} == dict.fromkeys(report.categories, 1.0)
    assert report.micro.tp == score(gold_paper, gold_paper).micro.tp == 40
    assert not report.problems


def test_paper_missing_from_store_is_a_problem_not_a_failure():
    loaded = read_out_loaded(_store(), [PAPER, "10.1021_ic050460z"])
    assert PAPER in loaded.docs
    assert [p.paper for p in loaded.problems] == ["10.1021_ic050460z"]


def test_cli_run_scores_the_benchmark_and_writes_html(tmp_path: Path):
    _store(tmp_path / "kg").close()
    html = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["eval", "run", "--store", str(tmp_path / "kg"),
                                      "--json", "--html", str(html)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["papers"][PAPER]["cbu"]["f1"] == 1.0
    assert sum(1 for p in data["problems"] if p["message"] == "paper not in the store") == 29
    assert 0 < data["micro"]["recall"] < 0.1
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 3 and "http" not in page


def test_cli_score_and_errors(tmp_path: Path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["eval", "score", "--gold", str(GOLD), "--pred", str(GOLD)])
    assert ok.exit_code == 0 and "F1 1.000" in ok.output
    bad = runner.invoke(cli, ["eval", "score", "--gold", str(tmp_path / "x"), "--pred", str(GOLD)])
    assert bad.exit_code == 2 and bad.output.startswith("error: no such benchmark folder")
    both = runner.invoke(cli, ["eval", "run"])
    assert both.exit_code == 2 and "--store" in both.output


def test_cli_nerre_doping_scores():
    result = CliRunner().invoke(cli, ["eval", "nerre", "--json", "--pred",
                                      str(NERRE / "gpt3" / "inference_decoded_json.json")])
    assert result.exit_code == 0, result.output
    s = json.loads(result.output)
    # published GPT-3 JSON-schema entity scores, reproduced exactly
    assert (s["basemats"]["tp"], s["basemats"]["fp"], s["basemats"]["fn"]) == (79, 10, 10)
    dopants = s["dopants"]
    assert (round(dopants["precision"], 3), round(dopants["recall"], 3)) == (0.779, 0.714)
    assert round(s["links"]["recall"], 3) == 0.684
