"""NERRE doping scorer: published GPT-3 and Llama-2 JSON-schema scores, and the counting rules."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from kgctl.assets import asset_dir
from kgctl.cli import cli
from kgctl.evaluation.nerre import score_doping

NERRE = asset_dir("domains") / "nerre-doping" / "benchmark"
DIGITS = 3
# (P, R, F1) per kind, as printed in all_doping_results_output_summary.txt
PUBLISHED = {
    "gpt3": {"basemats": (0.888, 0.888, 0.888), "dopants": (0.779, 0.714, 0.745),
             "links": (0.772, 0.684, 0.726)},
    "llama2": {"basemats": (0.871, 0.910, 0.890), "dopants": (0.872, 0.893, 0.882),
               "links": (0.836, 0.807, 0.821)},
}
SECTIONS = {"gpt3": "GPT-3 Doping-JSON", "llama2": "Llama 2 Doping-JSON"}


def _published_from_summary(model: str) -> dict[str, tuple[float, ...]]:
    text = (NERRE / "all_doping_results_output_summary.txt").read_text()
    section = text.split(SECTIONS[model], 1)[1].split("Total sequences", 1)[0]
    found = {}
    for name, kind in (("basemats", "basemats"), ("dopants", "dopants"), ("triplets", "links")):
        m = re.search(rf"^{name}: prec=([\d.]+), recall=([\d.]+), f1=([\d.]+)", section, re.M)
        found[kind] = tuple(round(float(v), DIGITS) for v in m.groups())
    return found


@pytest.mark.parametrize("model", ["gpt3", "llama2"])
def test_published_doping_scores_reproduced_to_three_decimals(model: str):
    assert _published_from_summary(model) == PUBLISHED[model]
    result = CliRunner().invoke(cli, ["eval", "nerre", "--json", "--pred",
                                      str(NERRE / model / "inference_decoded_json.json")])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.output)
    got = {k: tuple(round(scores[k][m], DIGITS) for m in ("precision", "recall", "f1"))
           for k in PUBLISHED[model]}
    assert got == PUBLISHED[model]


def test_gpt3_link_counts():
    gold = json.loads((NERRE / "test.json").read_text())
    pred = json.loads((NERRE / "gpt3" / "inference_decoded_json.json").read_text())
    links = score_doping(gold, pred)["links"]
    # 114 gold word pairs, 101 predicted, 78 gold pairs found
    assert (links.tp, links.fp, links.fn) == (78, 23, 36)


def _doc(sentence: dict) -> list[dict]:
    return [{"doping_sentences": [sentence]}]


def _graph(hosts: dict, dopants: dict, links: dict) -> dict:
    return {"basemats": hosts, "dopants": dopants, "dopants2basemats": links}


def test_repeated_gold_pair_is_credited_across_sentences():
    gold = _doc({"relevant": True, **_graph({"b0": "porous carbon", "b1": "mesoporous carbon"},
                                             {"d0": "N"}, {"d0": ["b0", "b1"]})})
    pred = _doc({"entity_graph_raw": _graph({"b0": "porous carbon"}, {"d0": "N"},
                                            {"d0": ["b0"]})})
    s = score_doping(gold, pred)
    # gold pairs: porous-N, carbon-N, mesoporous-N, carbon-N; predicted: porous-N, carbon-N
    assert (s["links"].tp, s["links"].fn, s["links"].fp) == (3, 1, -1)
    assert s["basemats"].tp == 3 and s["basemats"].fn == 1 and s["basemats"].fp == 0


def test_irrelevant_sentences_are_skipped_and_extra_words_are_fp():
    gold = [{"doping_sentences": [
        {"relevant": False, **_graph({"b0": "GaN"}, {"d0": "Mg"}, {"d0": ["b0"]})},
        {"relevant": True, **_graph({"b0": "ZnO"}, {"d0": "Al"}, {"d0": ["b0"]})}]}]
    pred = [{"doping_sentences": [
        {"entity_graph_raw": _graph({}, {}, {})},
        {"entity_graph_raw": _graph({"b0": "ZnO  film"}, {"d0": "Al"}, [])}]}]
    s = score_doping(gold, pred)
    assert (s["basemats"].tp, s["basemats"].fp, s["basemats"].fn) == (1, 1, 0)
    assert (s["links"].tp, s["links"].fp, s["links"].fn) == (0, 0, 1)


def test_sentence_count_mismatch_is_a_clear_error(tmp_path):
    pred = json.loads((NERRE / "gpt3" / "inference_decoded_json.json").read_text())
    pred[2]["doping_sentences"].pop()
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(pred))
    result = CliRunner().invoke(cli, ["eval", "nerre", "--pred", str(path)])
    assert result.exit_code == 2
    assert result.output.startswith("error: abstract 2 (") and "sentences" in result.output
