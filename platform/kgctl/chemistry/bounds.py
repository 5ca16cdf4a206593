"""Bounds on the work a name or a SMILES string may cause, judged before any parsing.

Length alone does not bound it: nested multipliers make a short name stand for a huge structure
("tetrakis(tris(tris(...)methyl)methyl)methane" triples with every level, and so does OPSIN's
work), and RDKit's ring perception and InChI grow faster than linearly with the atoms of one
molecule. A name's *expansion* is the largest product of the multipliers that enclose one of its
bracketed groups; a SMILES string's *atoms* are counted from its text.

>>> expansion("1,3,5-tris(4-carboxyphenyl)benzene")
3
>>> expansion("tetrakis(tris(tris(methyl)methyl)methyl)methane")
36
>>> expansion("2,2'-bipyridine-5,5'-dicarboxylic acid"), expansion("di(propan-2-yl)amine")
(1, 2)
>>> atoms("OC(=O)c1ccc(cc1)C(O)=O"), atoms("[Cu+2].[Cl-].[Cl-]"), atoms("BrCCl")
(12, 3, 3)
"""

from __future__ import annotations

import re

MAX_EXPANSION = 1_000  # copies of one group a name may ask for (MOP linkers: at most ~12)
MAX_ATOMS = 200  # atoms of one SMILES (MOP precursors and linkers: under 100)

_MULTIPLIERS = {"di": 2, "bi": 2, "bis": 2, "tri": 3, "tris": 3, "tetra": 4, "tetrakis": 4,
                "penta": 5, "pentakis": 5, "hexa": 6, "hexakis": 6, "hepta": 7, "heptakis": 7,
                "octa": 8, "octakis": 8, "nona": 9, "nonakis": 9, "deca": 10, "decakis": 10}
_BEFORE_BRACKET = re.compile(r"([a-z]+)$")
_OPEN, _CLOSE = "([{", ")]}"
_ATOM = re.compile(r"\[[^\]]*\]|Br|Cl|[BCNOPSFIbcnops*]")


def expansion(name: str) -> int:
    """The largest product of multipliers around one bracketed group of `name`."""
    stack, largest = [1], 1
    for i, char in enumerate(name):
        if char in _OPEN:
            word = _BEFORE_BRACKET.search(name[max(0, i - 12):i].lower())
            factor = _multiplier(word.group(1)) if word else 1
            stack.append(stack[-1] * factor)
            largest = max(largest, stack[-1])
        elif char in _CLOSE and len(stack) > 1:
            stack.pop()
    return largest


def _multiplier(word: str) -> int:
    """The multiplier a word ends with ("tetrakis" 4, "hexa" 6); a word ending in "kis" that
    is not listed (undecakis, ...) counts as more than ten."""
    for prefix in sorted(_MULTIPLIERS, key=len, reverse=True):
        if word.endswith(prefix):
            return _MULTIPLIERS[prefix]
    return 11 if word.endswith("kis") else 1


def atoms(smiles: str) -> int:
    """The atoms a SMILES string writes (bracket atoms and the organic subset; hydrogens left
    implicit are not counted)."""
    return len(_ATOM.findall(smiles))
