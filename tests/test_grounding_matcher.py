"""Fuzzy blocking: when more labels tie on shared trigrams than the block holds, the label
closest in length to the query is kept, so a misspelt short name still finds its species."""

from __future__ import annotations

from kgctl.grounding.index import LabelIndex
from kgctl.grounding.matcher import BLOCK_LABELS, Matcher
from kgctl.grounding.spec import Thresholds

CHEMISTRY = "kgctl.chemistry.naming:NAMING"  # the mop30 pack's naming hook


def chemistry_index(rows):
    return LabelIndex.build(rows, naming=CHEMISTRY)


DISTRACTORS = BLOCK_LABELS + 100
THRESHOLDS = Thresholds(fuzzy_score=90, margin=3, candidates=10)


def crowded_index() -> LabelIndex:
    # every distractor contains every trigram of "tetrahydrofuran": all tie on the block count
    rows = [("ex:thf", "label:0", "tetrahydrofuran")]
    rows += [(f"ex:d{i:03d}", "label:0", f"tetrahydrofuran-2-yl compound {i}")
             for i in range(DISTRACTORS)]
    return chemistry_index(rows)


def test_misspelt_name_survives_a_crowded_block() -> None:
    result = Matcher(crowded_index(), THRESHOLDS).lookup("Tetrahydrofurann")
    assert result.match is not None and result.match.iri == "ex:thf"
    assert result.match.method == "fuzzy"
    assert result.candidates[0].iri == "ex:thf"


def test_block_is_bounded_and_deterministic() -> None:
    matcher = Matcher(crowded_index(), THRESHOLDS)
    first = matcher.lookup("tetrahydrofuran-2-yl compound 4x", k=10)
    again = matcher.lookup("tetrahydrofuran-2-yl compound 4x", k=10)
    assert first == again
    assert len(first.candidates) == 10
    assert first.candidates[0].iri == "ex:d004"


def test_signature_agreeing_label_outranks_a_closer_one_with_other_locants() -> None:
    index = chemistry_index([("ex:25", "label:0", "(2,5-dimethoxyphenyl)boronic acid"),
                              ("ex:26", "label:0", "2,6-dimethoxyphenylboronic acid")])
    result = Matcher(index, THRESHOLDS).lookup("(2,6-Dimethoxyphenyl)boronic acid")
    assert result.match is not None and result.match.iri == "ex:26"
    assert result.match.method == "fuzzy" and result.match.score == 100.0  # skeletons agree
    other = next(c for c in result.candidates if c.iri == "ex:25")
    assert not other.agrees and other.score > 90


def test_one_letter_chain_stems_and_stereo_never_match() -> None:
    index = chemistry_index([("ex:ethyl", "label:0", "ethyl n-octyl ketone"),
                              ("ex:2z", "label:0", "(2z)-2-ethylideneoxolane"),
                              ("ex:rac", "label:0", "(+)-nicotine")])
    matcher = Matcher(index, Thresholds(fuzzy_score=80, margin=0, candidates=5))
    for name in ("methyl n-octyl ketone", "(2e)-2-ethylideneoxolane"):
        result = matcher.lookup(name)
        assert result.match is None and "differ" in result.reason
    # a racemate is not the (+) enantiomer, not even once spaces and hyphens are squeezed out
    assert matcher.lookup("(±)-nicotine").match is None
    assert matcher.lookup("(+) nicotine").match.iri == "ex:rac"


def test_inverted_names_and_formulas_are_exact_evidence() -> None:
    index = chemistry_index([
        ("ex:odcb", "label:0", "1,2-dichlorobenzene"), ("ex:odcb", "id:formula", "C6H4Cl2"),
        ("ex:mdcb", "label:0", "1,3-dichlorobenzene"), ("ex:mdcb", "id:formula", "C6H4Cl2"),
        ("ex:cu", "label:0", "copper(ii) nitrate trihydrate"),
        ("ex:cu", "id:formula", "CuH6N2O9")])
    matcher = Matcher(index, THRESHOLDS)
    assert matcher.lookup("Benzene, 1,2-dichloro-").match.method == "exact"
    assert matcher.lookup("Benzene, 1,2-dichloro-").match.iri == "ex:odcb"
    hydrate = matcher.lookup("Cu(NO3)2·3H2O").match
    assert (hydrate.iri, hydrate.method, hydrate.matched) == ("ex:cu", "formula", "CuH6N2O9")
    isomers = matcher.lookup("Cl2C6H4")  # two species have this formula: no decision
    assert isomers.match is None and {c.iri for c in isomers.candidates} >= {"ex:odcb", "ex:mdcb"}


def test_chemistry_naming_drives_the_tiers() -> None:
    """The mop30 pack's naming: oxidation states, locants, abbreviations, formulas."""
    index = chemistry_index([
        ("ex:12", "label:0", "1,2-dichlorobenzene"), ("ex:13", "label:0", "1,3-dichlorobenzene"),
        ("ex:cu1", "label:0", "copper(I) chloride"), ("ex:cu2", "label:0", "copper(II) chloride"),
        ("ex:nmf", "label:0", "N,N-dimethylformamide")])
    matcher = Matcher(index, THRESHOLDS)
    assert matcher.lookup("Copper (II) Chloride").match.iri == "ex:cu2"
    assert matcher.lookup("1,2-dichlorbenzene").match.iri == "ex:12"
    assert matcher.lookup("1,4-dichlorobenzene").match is None
    assert matcher.lookup("DMF").match.method == "abbreviation"
    index = chemistry_index([("ex:bpo", "label:0", "benzoyl peroxide"),
                             ("ex:bpo", "id:formula", "C14H10O4"), ("ex:v", "id:formula", "Cl3V")])
    matcher = Matcher(index, THRESHOLDS)
    found = matcher.lookup("C14H10O4")  # a formula with carbon only ranks candidates
    assert found.match is None and found.candidates[0].iri == "ex:bpo"
    assert matcher.lookup("VCl3").match.iri == "ex:v"


def test_generic_naming_knows_no_formula() -> None:
    index = LabelIndex.build([("ex:v", "label:0", "vanadium chloride"),
                              ("ex:v", "id:formula", "Cl3V")])
    assert Matcher(index, THRESHOLDS).lookup("VCl3").match is None
