"""Eunomia water stability: cleaning rules, accuracy and yield with hand-computed counts."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgctl.assets import asset_dir
from kgctl.cli import cli
from kgctl.evaluation.eunomia import GOLD_FILE, load_gold

GOLD = asset_dir("benchmarks") / "eunomia" / GOLD_FILE
PNAS = "10.1073/pnas.0602439103"
MN_PAPER = "10.1002/chem.201502532"


@pytest.fixture(scope="module")
def gold():
    return load_gold(GOLD)


def _rows(gold) -> list[dict[str, str]]:
    return [{"doi": m.doi, "mof": m.name, "label": m.label} for m in gold]


def _eval(tmp_path: Path, rows: list[dict], *, suffix: str = ".json") -> dict:
    path = tmp_path / f"pred{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    else:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["doi", "mof", "label"])
            writer.writeheader()
            writer.writerows(rows)
    result = CliRunner().invoke(cli, ["eval", "eunomia", "--json", "--pred", str(path)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cleaned_gold_counts(gold):
    # 371 rows - 6 (ref 54 = ref 36) - 3 (ref 67 = ref 39) - 1 (ref 43 = ref 66) - 1 repeated row
    assert len(gold) == 360
    assert Counter(m.label for m in gold) == {"Not provided": 199, "Stable": 123, "Unstable": 38}
    assert len({m.doi for m in gold}) == 98
    assert {m.reference for m in gold} & {54, 67, 43} == set()
    assert all(m.doi == m.doi.strip() and "\x02" not in m.doi for m in gold)
    assert {m.name for m in gold if m.doi == PNAS} >= {"ZIF-8", "ZIF-11"}
    assert {m.name for m in gold if m.doi == MN_PAPER} == {
        "[Mn2(Hcbptz)2(Cl)]Cl", "[Mn2(Hcbptz)2(Cl)(H2O)]Cl.DMF.0.5 CH3CN / MOF 1"}
    assert all(m.name == m.name.strip() and "$" not in m.name for m in gold)


def test_gold_scored_against_itself_is_one(gold, tmp_path: Path):
    for suffix in (".json", ".csv"):
        s = _eval(tmp_path, _rows(gold), suffix=suffix)
        assert (s["accuracy"], s["yield"], s["correct"], s["gold_definite"]) == (1.0, 1.0, 360, 161)
        assert s["unmatched_predictions"] == s["duplicate_predictions"] == 0


def test_known_errors_give_the_exact_accuracy_and_yield(gold, tmp_path: Path):
    rows = _rows(gold)
    stable = [r for r in rows if r["label"] == "Stable"]
    for r in stable[:3]:  # 3 Stable -> Unstable: wrong for accuracy and yield
        r["label"] = "Unstable"
    for r in [r for r in rows if r["label"] == "Not provided"][:4]:  # 4 false definite labels
        r["label"] = "stable"
    unstable = [r for r in rows if r["label"] == "Unstable" and r not in stable[:3]]
    missing = unstable[:2]  # 2 gold Unstable MOFs not predicted at all -> "Not provided"
    rows = [r for r in rows if r not in missing]
    rows.append({"doi": "10.9999/none", "mof": "MOF-X", "label": "Stable"})
    s = _eval(tmp_path, rows)
    assert s["correct"] == 360 - 3 - 4 - 2 and s["accuracy"] == pytest.approx(351 / 360)
    assert s["definite_correct"] == 161 - 3 - 2 and s["yield"] == pytest.approx(156 / 161)
    assert s["confusion"]["Stable"]["Unstable"] == 3
    assert s["confusion"]["Not provided"]["Stable"] == 4
    assert s["confusion"]["Unstable"]["Not provided"] == 2
    assert s["unmatched_predictions"] == 1


def test_aliases_glyphs_and_doi_spellings_match(gold, tmp_path: Path):
    rows = [{"doi": "https://doi.org/10.1021/JA9061344", "mof": "MOF-5", "label": "Unstable"},
            {"doi": "10.1016/j.inoche.2009.12.010", "mof": "{[Cd(oba)(bib)]·2H2O}n",
             "label": "Not provided"},
            {"doi": "10.1039/b917659d", "mof": "[Ni3(L2)2(H2O)4(μ-4,4′-bpy)3]n·(H2O)2n",
             "label": "Not provided"},
            {"doi": "10.1021/ja9061344", "mof": "IRMOF-1", "label": "Stable"}]  # duplicate
    s = _eval(tmp_path, rows)
    assert s["unmatched_predictions"] == 0 and s["duplicate_predictions"] == 1
    # MOF-5 counted once, as Unstable (first prediction wins); all other MOFs default to
    # "Not provided": 199 gold Not provided right + MOF-5
    assert s["correct"] == 199 + 1 and s["definite_correct"] == 1


def test_bad_prediction_file_is_one_clear_error(tmp_path: Path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"doi": "10.1/x", "mof": "A", "label": "maybe"}]))
    result = CliRunner().invoke(cli, ["eval", "eunomia", "--pred", str(path)])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "'maybe'" in result.output
    path.write_text(json.dumps([{"doi": "10.1/x", "label": "Stable"}]))
    result = CliRunner().invoke(cli, ["eval", "eunomia", "--pred", str(path)])
    assert result.exit_code == 2 and "'mof'" in result.output
