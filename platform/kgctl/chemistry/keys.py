"""Chemistry's key normalisers for deduplication (the mop30 pack's ``dedup_keys`` hook):
molecular formulas in Hill notation, CCDC deposition numbers and InChIKeys.

>>> hill_formula("CH3OH") == hill_formula("CH4O")
True
>>> hill_formula("Cu(NO3)2·6H2O")
'CuH12N2O12'
>>> hill_formula("Cu(NO3)2·3H2O") == hill_formula("Cu(NO3)2·6H2O")
False
>>> hill_formula("[Zr3O(OH)3(C5H5)3]"), hill_formula("CO2")
('C15H18O4Zr3', 'CO2')
>>> hill_formula("n/a") is None
True
>>> hill_formula("Cp2ZrCl2") is None  # abbreviations are not formulas: no key, no conflict
True
>>> ccdc_key("CCDC 1528352") == ccdc_key("1528352")
True
"""

from __future__ import annotations

import re

from kgctl.chemistry.formula import hill_formula as formula_of
from kgctl.dedup.keys import clean_text

_MISSING = {"", "n/a", "na", "none", "-", "unknown"}


def hill_formula(formula: str) -> str | None:
    """Hill-notation key of a molecular formula (hydrates, building-unit fragments and charges
    included, `kgctl.chemistry.formula`), or None when the text is not a parseable formula."""
    if clean_text(formula).casefold() in _MISSING:
        return None
    return formula_of(formula, fragments=True)  # raw: a superscript charge reads as one


def ccdc_key(text: str) -> str | None:
    """Digits of a CCDC deposition number ("CCDC 1528352" -> "1528352")."""
    digits = re.sub(r"\D", "", text)
    return digits or None


def inchikey_key(text: str) -> str | None:
    """Upper-cased InChIKey when the text has the 14-10-1 shape."""
    key = clean_text(text).upper().removeprefix("INCHIKEY=")
    return key if re.fullmatch(r"[A-Z]{14}-[A-Z]{10}-[A-Z]", key) else None


NORMALISERS = {"formula": hill_formula, "ccdc": ccdc_key, "inchikey": inchikey_key}
