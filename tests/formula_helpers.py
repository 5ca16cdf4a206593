"""RDKit's formula of a structure as the reference for the formula parser, and the spellings of
that formula a parser must read: RDKit's own text, the composition in random element order with
split counts, the charge written in each accepted way, and salts and hydrates written as parts
joined by a dot (or a space before the water) with multipliers.

RDKit writes C, H, then alphabetical also without carbon ("HCl"); strict Hill order, as
PubChem and the reference write it, is then all alphabetical ("ClH"), isotopes of elements other
than hydrogen staying at the end where RDKit puts them. Worked out here from RDKit's text alone,
independently of the parser.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from rdkit import Chem, RDLogger
from rdkit.Chem.rdMolDescriptors import CalcMolFormula

RDLogger.DisableLog("rdApp.*")
_NUCLIDE = re.compile(r"(\[\d+[A-Z][a-z]?\]|[A-Z][a-z]?)(\d*)")
_RDKIT_CHARGE = re.compile(r"[+-]\d*$")
_LETTERS = {"D": ("H", 2), "T": ("H", 3)}
DOTS = ("·", ".", "•", "*")
SUPERSCRIPT = str.maketrans("0123456789+-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")

# pieces of random molecules: bonded in a chain, or (after a dot) separate fragments
CHAIN = ["C", "CC", "N", "O", "S", "Cl", "Br", "F", "P", "c1ccccc1", "C(=O)O", "C#N",
         "[Si](C)(C)", "B(O)O", "[Se]", "C(=O)[O-]", "[NH3+]", "[13CH2]", "[2H]", "[3H]",
         "[18OH]", "[15NH2]", "C([2H])([2H])"]
SEPARATE = ["O", "[Na+]", "[Cl-]", "[Cu+2]", "[K+]", "O=S(=O)([O-])[O-]", "[NH4+]", "CO",
            "CN(C)C=O", "[2H]O[2H]", "[Fe-4](C#N)(C#N)(C#N)(C#N)(C#N)C#N", "[Zn+2]"]


def rdkit_formula(mol, *, abbreviate: bool = False) -> str:
    """RDKit's formula with isotopes apart; `abbreviate` writes D and T for [2H] and [3H]."""
    return CalcMolFormula(mol, separateIsotopes=True, abbreviateHIsotopes=abbreviate)


def nuclides(formula: str) -> tuple[list[tuple[str, int]], str]:
    """RDKit's formula text as (nuclide token, count) pairs and its charge."""
    charge = _RDKIT_CHARGE.search(formula)
    body = formula[:charge.start()] if charge else formula
    pairs = [(token, int(n or 1)) for token, n in _NUCLIDE.findall(body)]
    assert "".join(t + (str(n) if n > 1 else "") for t, n in pairs) == body, formula
    return pairs, charge.group(0) if charge else ""


def _sort_key(token: str) -> tuple[str, int]:
    if token in _LETTERS:
        return _LETTERS[token]
    mass, symbol = re.fullmatch(r"\[?(\d*)([A-Z][a-z]?)\]?", token).groups()
    return symbol, int(mass or 0)


def strict_hill(mol) -> str:
    """The expected answer: RDKit's formula (D and T abbreviated) in strict Hill order."""
    pairs, charge = nuclides(rdkit_formula(mol, abbreviate=True))
    if not any(_sort_key(token)[0] == "C" for token, _ in pairs):
        # RDKit's tail (isotopes of elements other than H) stays; the rest goes alphabetical
        tail = [p for p in pairs if p[0].startswith("[") and _sort_key(p[0])[0] != "H"]
        pairs = sorted((p for p in pairs if p not in tail),
                       key=lambda pair: _sort_key(pair[0])) + tail
    return "".join(t + (str(n) if n > 1 else "") for t, n in pairs) + charge


def charge_spellings(charge: str) -> list[str]:
    """An RDKit charge ("-2", "+") in every accepted spelling."""
    if not charge:
        return [""]
    sign, size = charge[0], charge[1:]
    tail = f"{size}{sign}"
    return [charge, f"^{tail}", f" {tail}", tail.translate(SUPERSCRIPT),
            charge.replace("-", "−")]


def scrambled(formula: str, rnd: random.Random) -> str:
    """The same composition in random order, each count split in up to two pieces."""
    pairs, _ = nuclides(formula)
    pieces = []
    for token, count in pairs:
        first = rnd.randint(1, count)
        pieces += [(token, first), *([(token, count - first)] if count > first else [])]
    rnd.shuffle(pieces)
    return "".join(t + (str(n) if n > 1 else "") for t, n in pieces)


def spellings(mol, rnd: random.Random) -> list[str]:
    """Ways to write the formula of `mol` that must all parse to `strict_hill(mol)`."""
    written = rdkit_formula(mol)  # [2H] and [3H]: T is never read ("THF")
    pairs, charge = nuclides(written)
    texts = [written]
    if "[3H]" not in written:
        texts.append(rdkit_formula(mol, abbreviate=True))
    body = scrambled(written, rnd)
    texts += [body + spelled for spelled in charge_spellings(charge)]
    if charge:
        texts.append(f"[{body}]{charge[1:]}{charge[0]}")
    parts = Chem.GetMolFrags(mol, asMols=True)
    if len(parts) > 1 and all(not nuclides(rdkit_formula(p))[1] for p in parts):
        counted = Counter(rdkit_formula(p) for p in parts)
        pieces = [f"{n if n > 1 else ''}{scrambled(text, rnd)}" for text, n in counted.items()]
        rnd.shuffle(pieces)
        texts.append(rnd.choice(DOTS).join(pieces))
        if counted.get("H2O") and len(counted) > 1:  # "CuSO4 5H2O"
            waters = counted.pop("H2O")
            others = "·".join(f"{n if n > 1 else ''}{t}" for t, n in counted.items())
            texts.append(f"{others} {waters if waters > 1 else ''}H2O")
    return texts


def random_molecule(rnd: random.Random):
    """A random molecule from the pieces above (None when RDKit rejects it)."""
    chain = "".join(rnd.choice(CHAIN) for _ in range(rnd.randint(1, 6)))
    extra = [rnd.choice(SEPARATE) for _ in range(rnd.randint(0, 3))]
    return Chem.MolFromSmiles(".".join([chain, *extra]))
