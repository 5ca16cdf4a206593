"""One formula parser for grounding, dedup and minting: property tests against RDKit's formula
of random structures (isotopes, charges, salts and hydrates), each written in every spelling
the parser reads (tests/formula_helpers.py), and the spellings the old parsers got wrong."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgctl.chemistry import keys
from kgctl.chemistry.formula import hill_formula
from kgctl.chemistry.naming import canonical_identifier

Chem = pytest.importorskip("rdkit.Chem")
from formula_helpers import CHAIN, SEPARATE, spellings, strict_hill  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(CHAIN), min_size=1, max_size=6),
       st.lists(st.sampled_from(SEPARATE), max_size=3), st.integers(0, 6), st.randoms())
def test_every_spelling_agrees_with_rdkit(chain, separate, waters, rnd):
    mol = Chem.MolFromSmiles(".".join(["".join(chain), *separate, *["O"] * waters]))
    assume(mol is not None)
    expected = strict_hill(mol)
    for text in spellings(mol, rnd):
        assert hill_formula(text) == expected, text
        assert keys.hill_formula(text) == canonical_identifier("formula", text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("CO2", "CO2"), ("C60", "C60"), ("CuSO4 5H2O", "CuH10O9S"), ("CuSO4·5H2O", "CuH10O9S"),
    ("SO4 2-", "O4S-2"), ("SO₄²⁻", "O4S-2"), ("[Fe(CN)6]4-", "C6FeN6-4"), ("NH4+", "H4N+"),
    ("CDCl3", "CDCl3"), ("[13C]H4", "[13C]H4"), ("THF", None), ("CH3T", None),
])
def test_the_spellings_the_two_parsers_disagreed_on(text, expected):
    assert hill_formula(text) == keys.hill_formula(text) == expected
