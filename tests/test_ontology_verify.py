"""The profile's per-class `verify` text: parsed with its lines, carried on ClassInfo."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgctl.assets import asset_dir
from kgctl.errors import OntologyError
from kgctl.ontology import default_ir, load_ir

ONTOSYN = "https://www.theworldavatar.com/kg/OntoSyn/"
TBOX = asset_dir("domains") / "mop30" / "ontologies" / "ontosynthesis.ttl"


def test_bundled_profile_gives_verify_rules_one_per_line() -> None:
    ir = default_ir()
    add = ir.classes[ONTOSYN + "Add"].verify.splitlines()
    assert len(add) == 2 and add[0].startswith("Each chemical introduced is a separate Add")
    assert ir.classes[ONTOSYN + "Stir"].verify == ""  # no rule: nothing invented


def test_verify_text_folded_and_conflicts_named(tmp_path: Path) -> None:
    first = tmp_path / "a.profile.yaml"
    first.write_text("classes:\n  ontosyn:Stir:\n    verify: >-\n      one stir\n"
                     "      per   stirring\n", encoding="utf-8")
    ir = load_ir([TBOX], profile_paths=[first])
    assert ir.classes[ONTOSYN + "Stir"].verify == "one stir per stirring"
    second = tmp_path / "b.profile.yaml"
    second.write_text("classes:\n  ontosyn:Stir:\n    verify: two stirs\n", encoding="utf-8")
    with pytest.raises(OntologyError, match=r"b.profile.yaml:2: verify of ontosyn:Stir .* "
                                            r"a.profile.yaml:2 says"):
        load_ir([TBOX], profile_paths=[first, second])
    second.write_text("classes:\n  ontosyn:Stir:\n    verify: ''\n", encoding="utf-8")
    with pytest.raises(OntologyError, match="b.profile.yaml:3: expected a non-empty text"):
        load_ir([TBOX], profile_paths=[second])
