"""The compiled extraction plan: deterministic, golden, generic over ontologies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgctl.compiler import compile_tools
from kgctl.compiler.plan import compile_plan, load_hints
from kgctl.errors import InputError
from kgctl.ontology import default_ir, load_ir

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "agent" / "plan_twa.json"


def test_plan_matches_golden_file() -> None:
    """The default pack's plan, with its plan hints (as `kgctl extract` compiles it)."""
    from kgctl.pipeline.demo import compile_all

    text = compile_all()[2].to_json()
    if os.environ.get("KGCTL_REGENERATE"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), "plan changed: KGCTL_REGENERATE=1 to accept"


def test_plan_steps_follow_the_tool_sets() -> None:
    ir = default_ir()
    surface = compile_tools(ir)
    plan = compile_plan(ir, surface=surface)
    ids = [s.id for s in plan.steps]
    assert ids == [t for t in surface.toolsets if t in ids]  # tool-set order
    assert ids[:3] == ["core", "parts", "sequence"]
    names = {t.name for t in surface.tools}
    for step in plan.steps:
        assert set(step.tools) <= names
        own = [t for t in surface.tools if t.toolset == step.id]
        creates = [t for t in own if t.action == "create"]
        for tool in own:  # plus shared link/read tools, never repair tools
            # an add_ tool is left out only when a create_ tool of the step takes it inline
            assert tool.name in step.tools or (tool.action == "add" and any(
                a.property == tool.via and a.fields for c in creates for a in c.args))
        assert not set(step.tools) & set(plan.repair_tools)
        for cls in step.classes:  # the prompt names each entity (its comment: describe_tool)
            assert f"- {ir.classes[cls].label} (" in step.prompt
    sequence = plan.step("sequence")
    assert "add_washing_solvent" not in sequence.tools  # create_filter takes it inline
    assert "add_hnmr_data" in plan.step("ontospecies_subgraph").tools  # also onto outputs
    assert "unique and contiguous from 1" in sequence.prompt


def test_profile_verify_texts_are_verification_rules(tmp_path: Path) -> None:
    ir = default_ir()
    plan = compile_plan(ir)
    assert "- Explicit cooling or another distinct thermal phase is a separate HeatChill" \
        in plan.step("sequence").verify
    assert "HeatChill" not in plan.step("core").verify
    hints_file = tmp_path / "hints.yaml"
    hints_file.write_text("read:\n  sequence: [procedure, workup]\n", encoding="utf-8")
    hinted = compile_plan(ir, hints=load_hints(hints_file, ir))
    assert "workup" in hinted.step("sequence").read and "workup" not in plan.step("core").read
    hints_file.write_text("read:\n  nosuchstep: [x]\n", encoding="utf-8")
    with pytest.raises(InputError, match="unknown step 'nosuchstep'"):
        load_hints(hints_file, ir)
    hints_file.write_text("verify:\n  ontosyn:HeatChill: [x]\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid plan hints"):
        load_hints(hints_file, ir)  # verification rules live in the profile


def test_another_ontology_gives_its_own_plan() -> None:
    ir = load_ir([DATA / "ontology" / "doping.ttl"])
    plan = compile_plan(ir)
    assert plan.steps and all(s.tools for s in plan.steps)
    assert not any("ontosyn" in s.prompt.lower() for s in plan.steps)
    assert plan.to_json() == compile_plan(load_ir([DATA / "ontology" / "doping.ttl"])).to_json()


def test_compile_plan_cli_prints_the_plan() -> None:
    from kgctl.cli import cli

    result = CliRunner().invoke(cli, ["compile", "--plan"])
    assert result.exit_code == 0, result.output
    assert result.output == GOLDEN.read_text(encoding="utf-8")
    bad = CliRunner().invoke(cli, ["compile", "--plan", "--plan-hints", "/no/such/hints.yaml"])
    assert bad.exit_code == 2 and bad.output.startswith("error: cannot read plan hints")
