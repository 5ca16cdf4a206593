"""Fuzzy blocking: when more labels tie on shared trigrams than the block holds, the label
closest in length to the query is kept, so a misspelt short name still finds its species."""

from __future__ import annotations

from kgctl.grounding.index import LabelIndex
from kgctl.grounding.matcher import BLOCK_LABELS, Matcher
from kgctl.grounding.spec import Thresholds

DISTRACTORS = BLOCK_LABELS + 100
THRESHOLDS = Thresholds(fuzzy_score=90, margin=3, candidates=10)


def crowded_index() -> LabelIndex:
    # every distractor contains every trigram of "tetrahydrofuran": all tie on the block count
    rows = [("ex:thf", "label:0", "tetrahydrofuran")]
    rows += [(f"ex:d{i:03d}", "label:0", f"tetrahydrofuran-2-yl compound {i}")
             for i in range(DISTRACTORS)]
    return LabelIndex.build(rows)


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
