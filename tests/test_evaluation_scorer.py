"""Scorer: hand-computed counts for assignment, order, empty slots, duplicates, k errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kgctl.assets import asset_dir
from kgctl.evaluation.loader import Loaded, load_benchmark, parse_document
from kgctl.evaluation.report import score
from kgctl.evaluation.scorer import align
from kgctl.evaluation.slots import Node, to_node

GOLD_DIR = asset_dir("domains") / "mop30" / "benchmark"
PAPER = "10.1021_ic050460z"


def _steps(*steps: dict) -> dict:
    return {"Synthesis": [{"productCCDCNumber": "1", "steps": list(steps)}]}


def _counts(gold: dict, pred: dict, category: str = "steps") -> tuple[int, int, int]:
    c = align(to_node(parse_document(category, gold)), to_node(parse_document(category, pred)))
    return c.total.tp, c.total.fp, c.total.fn


ADD = {"Add": {"stepNumber": 1, "atmosphere": "N2", "duration": "N/A",
               "addedChemical": [{"chemicalName": ["dmf"], "chemicalAmount": "2 mL"}]}}
HEAT = {"HeatChill": {"stepNumber": 2, "targetTemperature": "120 °C", "duration": "2 days"}}


def test_steps_are_order_insensitive():
    swapped = _steps({"HeatChill": {**HEAT["HeatChill"], "stepNumber": 1}},
                     {"Add": {**ADD["Add"], "stepNumber": 2}})
    # slots: ccdc, 2 types, atmosphere, chemicalName, chemicalAmount, temperature, duration
    assert _counts(_steps(ADD, HEAT), swapped) == (8, 0, 0)


def test_empty_on_both_sides_counts_nothing_and_spellings_agree():
    pred = _steps({"Add": {"stepNumber": 1, "atmosphere": "n2", "duration": "n/a", "targetPH": -1,
                           "addedChemical": [{"chemicalName": ["DMF"], "chemicalAmount": "2 ml"}]}})
    assert _counts(_steps(ADD), pred) == (5, 0, 0)


def test_assignment_maximises_matched_slots():
    gold = _steps(HEAT, {"HeatChill": {"stepNumber": 3, "targetTemperature": "25 °C",
                                       "duration": "1 h"}})
    # the first predicted step shares 1 slot with gold[0] and 2 with gold[1]: optimal pairing
    pred = _steps({"HeatChill": {"targetTemperature": "25 °C", "duration": "2 days"}},
                  {"HeatChill": {"targetTemperature": "120 °C", "duration": "1 h"}})
    # pairs: (gold0, pred1) type+T = 2 TP, duration FP+FN; (gold1, pred0) type+T 2 TP, dur FP+FN
    assert _counts(gold, pred) == (1 + 4, 2, 2)


def test_duplicate_predictions_are_false_positives():
    # duplicated step: one copy aligns (4 TP: ccdc, type, T, duration), the other is all FP (3)
    assert _counts(_steps(HEAT), _steps(HEAT, HEAT)) == (4, 3, 0)


def test_unmatched_records_count_all_their_slots():
    assert _counts(_steps(HEAT), {"Synthesis": []}) == (0, 0, 4)


def test_name_lists_agree_on_a_shared_alias():
    g = Node("x", {"n": ("bdc", "isophthalic acid")})
    assert align(g, Node("x", {"n": ("isophthalic acid",)})).total.tp == 1
    assert align(g, Node("x", {"n": ("btc",)})).total.fp == 1


def test_gold_against_itself_is_one():
    gold = load_benchmark(GOLD_DIR)
    report = score(gold, gold)
    assert report.micro.f1 == 1.0 and report.micro.tp > 4000
    assert all(c.f1 == 1.0 for c in report.categories.values()) and len(report.categories) == 4
    assert len(report.papers) == 30 and not report.problems


@pytest.mark.parametrize("k", [1, 3, 7])
def test_k_slot_errors_give_k_fp_and_k_fn(tmp_path: Path, k: int):
    data = json.loads((GOLD_DIR / "cbu" / f"{PAPER}.json").read_text())
    broken = copy.deepcopy(data)
    slots = [(rec, f"cbuFormula{n}") for rec in broken["synthesisProcedures"] for n in (1, 2)]
    slots += [(rec, "mopCCDCNumber") for rec in broken["synthesisProcedures"]]
    assert len(slots) >= k
    for rec, key in slots[:k]:
        rec[key] = rec[key] + "X"
    gold = Loaded(docs={PAPER: {"cbu": parse_document("cbu", data)}})
    pred = Loaded(docs={PAPER: {"cbu": parse_document("cbu", broken)}})
    report = score(gold, pred, categories=("cbu",))
    assert (report.micro.fp, report.micro.fn) == (k, k)


def test_malformed_file_names_file_and_field_and_rest_scores(tmp_path: Path):
    for category in ("steps", "cbu"):
        (tmp_path / category).mkdir()
    bad = _steps({"Add": {"stepNumber": "first"}})
    (tmp_path / "steps" / "p1.json").write_text(json.dumps(bad))
    (tmp_path / "cbu" / "p1.json").write_text(json.dumps(
        {"synthesisProcedures": [{"mopCCDCNumber": "1", "cbuFormula1": "[Cu2]"}]}))
    loaded = load_benchmark(tmp_path)
    texts = [str(p) for p in loaded.problems]
    assert any("steps/p1.json" in t and "Synthesis.0.steps.0.stepNumber" in t for t in texts)
    assert any("chemicals" in t and "missing" in t for t in texts)
    report = score(loaded, loaded, categories=("steps", "cbu"))
    assert report.categories["cbu"].tp == 2
