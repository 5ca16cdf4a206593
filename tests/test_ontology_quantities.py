"""Profile keys for quantities: unit aliases beside the shipped alias file, and minimums."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgctl.assets import asset_dir
from kgctl.errors import OntologyError
from kgctl.ontology import default_ir, load_ir

OM = "http://www.ontology-of-units-of-measure.org/resource/om-2/"
ONTOLOGIES = asset_dir("domains") / "mop30" / "ontologies"
HEAD = """quantities:
  value_property: om2:hasNumericalValue
  unit_property: om2:hasUnit
  kinds:
"""


def _profile(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.profile.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def test_profile_unit_aliases_resolve_with_their_yaml_line() -> None:
    ir = default_ir()
    shipped = json.loads((ONTOLOGIES / "om2_unit_aliases.json").read_text(encoding="utf-8"))
    assert "°C per hour" not in shipped["aliases"]  # the profile, not the file, provides it
    assert ir.resolve_unit("°C per hour", OM + "TemperatureRate") == OM + "degreeCelsiusPerHour"
    assert ir.resolve_unit("°C per hour", OM + "Temperature") is None  # not a temperature unit
    alias = next(a for a in ir.profile_unit_aliases if a.spelling == "°C per hour")
    lines = (ONTOLOGIES / "om2.profile.yaml").read_text(encoding="utf-8").splitlines()
    assert alias.source.file == "om2.profile.yaml" and "°C per hour" in lines[alias.source.line - 1]


def test_minimum_per_quantity_kind_comes_from_the_profile() -> None:
    ir = default_ir()
    assert ir.quantities[OM + "Duration"].minimum == 0
    assert ir.quantities[OM + "Temperature"].minimum is None  # temperatures can be negative
    assert ir.quantities[OM + "TemperatureRate"].minimum is None


def test_custom_minimum_and_alias(tmp_path: Path) -> None:
    path = _profile(tmp_path, "    om2:Temperature: {units: om2:TemperatureUnit, minimum: -273.15}"
                    "\nunit_aliases:\n  degrees C: om2:degreeCelsius\n")
    ir = load_ir([ONTOLOGIES / "om2.ttl"], profile_paths=[path])
    assert ir.quantities[OM + "Temperature"].minimum == -273.15
    assert ir.resolve_unit("Degrees C") == OM + "degreeCelsius"
    assert str(ir.profile_unit_aliases[0].source) == "t.profile.yaml:7"


@pytest.mark.parametrize("text,message", [
    ("    om2:Duration: {units: om2:DurationUnit, minimum: none}\n",
     "t.profile.yaml:5: expected a number, got 'none'"),
    ("    om2:Duration: {minimum: 0}\n", "t.profile.yaml:5: a quantity kind needs 'units'"),
    ("    om2:Duration: {units: om2:DurationUnit, least: 0}\n", "unknown key 'least'"),
    ("    om2:Duration: om2:DurationUnit\nunit_aliases:\n  fortnight: om2:kelvin\n",
     "t.profile.yaml:7: unit alias 'fortnight' names kelvin, not a unit of any quantity kind"),
    ("    om2:Duration: om2:DurationUnit\nunit_aliases:\n  h: om2:minute\n",
     "t.profile.yaml:7: unit alias 'h' already means hour"),
])
def test_bad_quantity_profile_names_its_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(OntologyError) as caught:
        load_ir([ONTOLOGIES / "om2.ttl"], profile_paths=[_profile(tmp_path, text)])
    assert message in str(caught.value)
