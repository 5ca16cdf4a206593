"""Structure -> identifiers and formula with RDKit (pure functions of a SMILES string).

>>> s = describe("OC(=O)c1ccc(cc1)C(O)=O")
>>> s.formula, s.inchikey, s.smiles
('C8H6O4', 'KKEYFWRCBNTPAC-UHFFFAOYSA-N', 'O=C(O)c1ccc(C(=O)O)cc1')
>>> describe("not a smiles") is None
True
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, ConfigDict

from kgctl.chemistry.errors import ChemistryUnavailable

CHARGED = re.compile(r"[+-]\d*$")  # the charge RDKit appends to a formula


class Structure(BaseModel):
    model_config = ConfigDict(frozen=True)
    smiles: str  # RDKit canonical SMILES
    inchi: str
    inchikey: str
    formula: str  # Hill order, charge appended (RDKit's CalcMolFormula)


def rdkit():
    """The RDKit modules used here, or one line saying how to install them."""
    try:
        from rdkit import Chem, RDLogger
        from rdkit.Chem import rdMolDescriptors
    except ImportError:
        raise ChemistryUnavailable("RDKit is not installed: pip install 'kgctl[chem]'") from None
    RDLogger.DisableLog("rdApp.*")  # parse failures are answers (None), not log noise
    return Chem, rdMolDescriptors


def molecule(smiles: str):
    """An RDKit molecule, or None for text RDKit cannot read."""
    chem, _ = rdkit()
    return chem.MolFromSmiles(smiles) if smiles and len(smiles) < 2000 else None


def describe(smiles: str) -> Structure | None:
    mol = molecule(smiles)
    if mol is None:
        return None
    chem, descriptors = rdkit()
    inchi = chem.MolToInchi(mol) or ""
    return Structure(smiles=chem.MolToSmiles(mol), inchi=inchi,
                     inchikey=chem.InchiToInchiKey(inchi) if inchi else "",
                     formula=descriptors.CalcMolFormula(mol))


def uncharged(structure: Structure) -> Structure | None:
    """The neutral form of an ion made by protons lost or gained, or None if there is none.

    >>> uncharged(describe("Nc1cc(C(=O)[O-])ccc1C(=O)[O-]")).formula
    'C8H7NO4'
    >>> uncharged(describe("CC(=O)O")) is None, uncharged(describe("[Na+].CC(=O)[O-]")) is None
    (True, True)
    """
    from rdkit.Chem.MolStandardize import rdMolStandardize

    mol = molecule(structure.smiles)
    chem, _ = rdkit()
    neutral = describe(chem.MolToSmiles(rdMolStandardize.Uncharger().uncharge(mol)))
    return neutral if neutral is not None and neutral.formula != structure.formula and \
        not CHARGED.search(neutral.formula) else None


def composition(mol, atoms: set[int] | None = None) -> Counter[str]:
    """Element counts (hydrogens included) of a molecule or of some of its atoms."""
    counts: Counter[str] = Counter()
    for atom in mol.GetAtoms():
        if atoms is None or atom.GetIdx() in atoms:
            counts[atom.GetSymbol()] += 1
            counts["H"] += atom.GetTotalNumHs()
    return +counts
