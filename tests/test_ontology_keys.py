"""Natural keys and standalone classes in profiles: parsed with their line, carried on
ClassInfo, checked, and what they change in the compiled tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgctl.assets import asset_dir
from kgctl.compiler import compile_tools
from kgctl.errors import OntologyError
from kgctl.ontology import default_ir, load_ir

MOPS = "https://www.theworldavatar.com/kg/ontomops/"
TBOX = asset_dir("domains") / "mop30" / "ontologies" / "ontomops-subgraph.ttl"


def _profile(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "k.profile.yaml"
    path.write_text("classes:\n  ontomops:ChemicalBuildingUnit:\n" + body, encoding="utf-8")
    return path


def test_bundled_cbu_is_keyed_by_its_formula_and_other_classes_are_not() -> None:
    ir = default_ir()
    cbu = ir.classes[MOPS + "ChemicalBuildingUnit"]
    assert (cbu.key, cbu.identity) == (MOPS + "hasCBUFormula", "label")
    assert cbu.key_source is not None and cbu.key_source.file == "ontomops-subgraph.profile.yaml"
    assert cbu.key_source.line is not None
    keyed = sorted(ir.curie(c) for c, info in ir.classes.items() if info.key)
    assert keyed == ["ontomops:ChemicalBuildingUnit"]


def test_key_implies_reuse_and_keeps_its_line(tmp_path: Path) -> None:
    path = _profile(tmp_path, "    key: ontomops:hasCBUFormula\n"
                              "    max_one: [ontomops:hasCBUFormula]\n")
    info = load_ir([TBOX], profile_paths=[path]).classes[MOPS + "ChemicalBuildingUnit"]
    assert info.identity == "label" and info.key == MOPS + "hasCBUFormula"
    assert str(info.key_source) == "k.profile.yaml:3"


@pytest.mark.parametrize(("body", "message"), [
    ("    identity: occurrence\n    key: ontomops:hasCBUFormula\n",
     "k.profile.yaml:4: a key identifies reused nodes"),
    ("    key: ontomops:hasChemicalBuildingUnit\n",
     "k.profile.yaml:3: ontomops:hasChemicalBuildingUnit must be a datatype property"),
    ("    key: ontomops:hasCCDCNumber\n",
     "k.profile.yaml:3: ontomops:hasCCDCNumber does not apply to ontomops:ChemicalBuildingUnit"),
    ("    key: ontomops:hasNoSuchThing\n", "k.profile.yaml:3: unknown property"),
    ("    key: ontomops:hasCBUFormula\n",
     "k.profile.yaml:3: key ontomops:hasCBUFormula of ontomops:ChemicalBuildingUnit must be "
     "max-one"),
])
def test_bad_keys_are_refused_with_their_line(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(OntologyError, match=message):
        load_ir([TBOX], profile_paths=[_profile(tmp_path, body)])


def test_standalone_class_gets_its_own_create_tool(tmp_path: Path) -> None:
    top = "top_level: [ontomops:MetalOrganicPolyhedron]\n"
    base = tmp_path / "base.profile.yaml"
    base.write_text(top, encoding="utf-8")
    owned = {t.name for t in compile_tools(load_ir([TBOX], profile_paths=[base])).tools}
    path = tmp_path / "s.profile.yaml"
    path.write_text(top + "classes:\n  ontomops:ChemicalBuildingUnit:\n    standalone: true\n",
                    encoding="utf-8")
    ir = load_ir([TBOX], profile_paths=[path])
    assert ir.classes[MOPS + "ChemicalBuildingUnit"].standalone
    tools = {t.name for t in compile_tools(ir).tools}
    assert tools - owned == {"create_chemical_building_unit"}
    assert default_ir().classes[MOPS + "MetalOrganicPolyhedron"].standalone
