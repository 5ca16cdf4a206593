"""``kgctl compile`` through its public door: summary, JSON, and every bad-input case ending in
one ``error:`` line with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgctl.assets import asset_dir
from kgctl.cli import cli
from kgctl.ontology import default_ir

DATA = Path(__file__).parent / "data" / "ontology"
DOPING = str(DATA / "doping.ttl")
MOP30_ONTOLOGIES = asset_dir("domains") / "mop30" / "ontologies"


def run(*args: str):
    return CliRunner().invoke(cli, ["compile", *args])


def test_default_summary_counts_the_bundled_set():
    ir = default_ir()
    result = run()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == ("ontologies: ontosynthesis.ttl, ontomops-subgraph.ttl, "
                        "ontospecies-subgraph.ttl, om2.ttl")
    declared = sum(not c.external for c in ir.classes.values())
    assert f"classes: {declared} declared" in result.output
    assert f"properties: {len(ir.properties)} " in result.output
    assert f"quantity kinds: {len(ir.quantities)}; units: {len(ir.units)}" in result.output
    top = next(line for line in lines if line.startswith("top level"))
    assert "ontosyn:ChemicalSynthesis" in top and "ontosyn:hasChemicalOutput" in top
    assert "ontosyn:hasOrder 1..N, contiguous" in result.output


def test_json_is_the_full_ir():
    result = run("--json")
    assert result.exit_code == 0
    assert result.output == default_ir().to_json() + "\n"


def test_other_ontology_without_profile_as_json():
    result = run(DOPING, "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["ontologies"] == ["doping.ttl"]
    assert "https://example.org/doping#DopedMaterial" in data["classes"]


def test_no_profile_flag_drops_the_profile_rules():
    result = run(str(MOP30_ONTOLOGIES / "ontosynthesis.ttl"), "--no-profile", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["top_level"] == [] and data["orderings"] == []
    assert {r["source"]["kind"] for r in data["restrictions"]} == {"owl"}


def bad(tmp_path: Path) -> dict[str, tuple[list[str], list[str]]]:
    broken = tmp_path / "broken.ttl"
    broken.write_text("@prefix ex: <http://e/> .\nex:a a ex:B ;\n  ex:p \"open .\n")
    bad_yaml = tmp_path / "bad.profile.yaml"
    bad_yaml.write_text("classes:\n  dop:Dopant: [unclosed\n")
    return {
        "missing file": ([str(tmp_path / "nope.ttl")], ["no such ontology file", "nope.ttl"]),
        "missing profile": ([DOPING, "--profile", str(tmp_path / "p.yaml")],
                            ["no such profile file"]),
        "turtle syntax": ([str(broken)], ["broken.ttl:3:", "syntax error"]),
        "undeclared prefix": ([str(DATA / "broken.ttl")], ["broken.ttl:6:3", "rdfs"]),
        "unknown format": ([str(DATA / "conflict.profile.yaml")], ["unknown ontology format"]),
        "yaml syntax": ([DOPING, "--profile", str(bad_yaml)], ["bad.profile.yaml:3:", "YAML"]),
        "unknown class": ([DOPING, "--profile", str(DATA / "unknown_class.profile.yaml")],
                          ["unknown_class.profile.yaml:4", "unknown class dop:Catalyst"]),
        "unknown property": ([DOPING, "--profile", str(DATA / "unknown_property.profile.yaml")],
                             ["unknown_property.profile.yaml:4",
                              "unknown property dop:hasSubstrate"]),
        "conflict": ([DOPING, "--profile", str(DATA / "conflict.profile.yaml")],
                     ["conflict.profile.yaml:4", "doping.ttl", "at least 2", "at most 1"]),
    }


CASES = ["missing file", "missing profile", "turtle syntax", "undeclared prefix",
         "unknown format", "yaml syntax", "unknown class", "unknown property", "conflict"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_clear_message(tmp_path, case):
    args, expected = bad(tmp_path)[case]
    result = run(*args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for text in expected:
        assert text in lines[0]
    assert "Traceback" not in result.output


def test_every_bad_case_is_exercised(tmp_path):
    assert sorted(bad(tmp_path)) == sorted(CASES)


def test_help_has_an_example():
    result = run("--help")
    assert result.exit_code == 0 and "Examples:\n    kgctl compile " in result.output
