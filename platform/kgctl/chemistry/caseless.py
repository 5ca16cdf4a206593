"""The ``caseless/1`` scorer: the strict alignment under the comparison and arithmetic rules of
the seeds' published MOP-30 scorer, so a run can be put beside their figures (gpt-4o agent,
micro F1 0.826, CBU 0.771) on equal terms.

Rules (each re-implemented from the documented behaviour of TheWorldAvatar/mcp-tool-layer,
commit 631dc30, files named below; no code taken):

1. Values compare case-insensitively after the value fingerprint (``evaluation/utils/
   scoring_common.py``, ``to_fingerprint``): trimmed, whitespace collapsed, lower-cased,
   sub/superscript digits as digits, primes and curly quotes as ASCII, Greek letters spelled
   out; "", "n/a", "na" and -1 are no value. The strict scorer already applies all of these
   except lower-casing formulas, so here every value is also case-folded.
2. CBU formulas compare after the written-form equivalences of ``evaluation/scoring_cbu.py``
   (``_normalize_cbu_formula``), applied to both sides after lower-casing: ``(c6h3)2`` is
   ``(c12h6)``; ``phpo3`` standing alone is ``c6h5po3``; ``v6o6(och3)9(vo4)`` is
   ``v7o10(och3)9``.
3. The CBU category counts formulas only: the aggregate report takes the CBU figures of the
   formula-only pass (``evaluation/scoring_all.py``, ``extract_cbu_formula_only_overall_
   metrics``); the CCDC number only pairs a predicted MOP with a gold one, and species names
   are not counted. Here CCDC numbers and names still steer the alignment but add no counts.
4. Arithmetic (``precision_recall_f1``): P = TP/(TP+FP), R = TP/(TP+FN), each 0.0 when its
   denominator is 0; F1 = 2PR/(P+R), 0.0 when P+R is 0. Per category the counts are summed
   over papers; the aggregate ("micro") sums TP, FP and FN over the four categories and applies
   the same formulas (``scoring_all.py``, ``generate_aggregate_report``).

What stays ours: records are aligned one-to-one by the optimal assignment (the published
scorers match greedily, per category with their own keys), and a formula repeated within one
MOP counts twice (published: a set). `docs/evaluation.md` works one example through by hand.

>>> caseless_agree("cbuFormula", "[(C6H3)2(CO2)4]", "[(c12h6)(co2)4]")
True
>>> caseless_agree("cbuFormula", "[Cu2(PhPO3)4]", "[Cu2(C6H5PO3)4]")
True
>>> caseless_agree("chemicalFormula", "CuCl2", "cucl2"), caseless_agree("x", "Ar", "N2")
(True, False)
"""

from __future__ import annotations

import re

from kgctl.evaluation.scorer import ScoringRule
from kgctl.evaluation.slots import Value, slots_agree

# written forms of one CBU formula (lower case), rule 2
FORMULA_FORMS = (
    (re.compile(re.escape("(c6h3)2")), "(c12h6)"),
    (re.compile(r"(?<![a-z0-9])phpo3(?![a-z0-9])"), "c6h5po3"),
    (re.compile(re.escape("v6o6(och3)9(vo4)")), "v7o10(och3)9"),
)
FORMULA_FIELD = "Formula"  # a slot key ending so holds a formula
# rule 3: slots of the cbu category that pair records but are not counted
CBU_UNCOUNTED = frozenset({"mopCCDCNumber", "chemicalName", "cbuSpeciesNames"})


def fold_formula(value: str) -> str:
    """A formula lower-cased with the published written-form equivalences.

    >>> fold_formula("[V6O6(OCH3)9(VO4)]"), fold_formula("PhPO3H2")
    ('[v7o10(och3)9]', 'phpo3h2')
    """
    folded = value.casefold()
    for pattern, replacement in FORMULA_FORMS:
        folded = pattern.sub(replacement, folded)
    return folded


def _fold(key: str, value: Value) -> Value:
    if isinstance(value, str):
        return fold_formula(value) if key.endswith(FORMULA_FIELD) else value.casefold()
    if isinstance(value, tuple):
        return tuple(v.casefold() for v in value)
    return value


def caseless_agree(key: str, gold: Value, pred: Value) -> bool:
    """Rules 1 and 2 on two canonical slot values."""
    return slots_agree(_fold(key, gold), _fold(key, pred))


CASELESS = ScoringRule(name="caseless/1", agree=caseless_agree,
                       uncounted={"cbu": CBU_UNCOUNTED}, empty=0.0,
                       note="the comparison and arithmetic of the published MOP-30 scorer "
                            "(values case-insensitive, equivalent CBU formula forms, CBU "
                            "counted by formulas, 0/0 counts 0); see docs/evaluation.md")
