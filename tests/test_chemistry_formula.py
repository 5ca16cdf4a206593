"""One formula parser for grounding and dedup: property tests against RDKit's formula of parsed
structures, written back in scrambled element order with split counts, and as hydrates. RDKit
puts H first also without carbon ("HCl"); strict Hill order, as PubChem and the reference write
it, is then all alphabetical ("ClH")."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgctl.chemistry import keys
from kgctl.chemistry.formula import hill_formula
from kgctl.chemistry.naming import canonical_identifier

Chem = pytest.importorskip("rdkit.Chem")
from rdkit import RDLogger  # noqa: E402
from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: E402

RDLogger.DisableLog("rdApp.*")
FRAGMENTS = ["C", "CC", "N", "O", "S", "Cl", "Br", "F", "P", "c1ccccc1", "C(=O)O", "C#N",
             "[Si](C)(C)", "B(O)O", "[Se]"]
_ELEMENT = re.compile(r"([A-Z][a-z]?)(\d*)")


def strict_hill(rdkit_formula: str) -> str:
    pairs = _ELEMENT.findall(rdkit_formula)
    if any(symbol == "C" for symbol, _ in pairs):
        return rdkit_formula
    return "".join(symbol + n for symbol, n in sorted(pairs))


def scrambled(formula: str, rnd: random.Random) -> str:
    """The same composition in random element order, each count split in up to two pieces."""
    pieces = []
    for symbol, n in _ELEMENT.findall(formula):
        count = int(n or 1)
        first = rnd.randint(1, count)
        pieces += [(symbol, first), *([(symbol, count - first)] if count > first else [])]
    rnd.shuffle(pieces)
    return "".join(s + (str(n) if n > 1 else "") for s, n in pieces)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6), st.randoms(),
       st.integers(min_value=0, max_value=6))
def test_formula_agrees_with_rdkit(fragments, rnd, waters):
    mol = Chem.MolFromSmiles("".join(fragments))
    assume(mol is not None)
    expected = strict_hill(CalcMolFormula(mol))
    assume("+" not in expected and "-" not in expected)
    text = scrambled(expected, rnd)
    assert hill_formula(text) == keys.hill_formula(text) == expected
    assert canonical_identifier("formula", text) == expected
    if waters:
        hydrate = strict_hill(CalcMolFormula(Chem.MolFromSmiles("".join(fragments)
                                                                + ".O" * waters)))
        for joined in (f"{text}·{waters}H2O", f"{text} {waters}H2O", f"{text}.{waters}H2O"):
            assert hill_formula(joined) == keys.hill_formula(joined) == hydrate


def test_the_spellings_the_two_parsers_disagreed_on():
    for text, expected in [("CO2", "CO2"), ("C60", "C60"), ("CuSO4 5H2O", "CuH10O9S")]:
        assert hill_formula(text) == keys.hill_formula(text) == expected
