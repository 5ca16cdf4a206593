"""Organic building units from a precursor structure: binding groups removed and counted.

A linker binds metals through its acidic groups. The building unit is the deprotonated linker,
written as the ontology's CBU notation does: the core (what is left once the binding groups are
removed) then the groups with their count, e.g. terephthalic acid -> ``[(C6H4)(CO2)2]``. The
notation has several spellings of one core (``(C6H4)2`` vs ``(C12H8)``), so a derivation gives
candidate spellings of one composition: the core in Hill order, and the core split into its ring
systems.

>>> unit = derive_linker("OC(=O)c1ccc(cc1)C(O)=O")
>>> unit.formula, unit.composition, unit.groups
('[(C6H4)(CO2)2]', 'C8H4O4', {'carboxylate': 2})
>>> derive_linker("OC(=O)c1ccc(cc1)-c1ccc(cc1)C(O)=O").spellings
('[(C12H8)(CO2)2]', '[(C6H4)2(CO2)2]')
>>> derive_linker("c1cc(ccc1-c1cn[nH]c1)-c1cn[nH]c1").formula
'[(C6H4)(C3H2N2)2]'
>>> derive_linker("CCO") is None
True
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict

from kgctl.chemistry.formula import hill
from kgctl.chemistry.structure import composition, molecule, rdkit

# (kind, written group, SMARTS of the group's atoms, acidic hydrogens lost per group)
BINDING_GROUPS = (
    ("carboxylate", "CO2", "[CX3](=O)[OX2H1,OX1-]", 1),
    ("sulfonate", "SO3", "[SX4](=O)(=O)[OX2H1,OX1-]", 1),
    ("phosphonate", "PO3", "[PX4](=O)([OX2H1,OX1-])[OX2H1,OX1-]", 2),
)
# an azole binds through its deprotonated ring nitrogen: the whole ring is the group
AZOLE_NH = "[nH;r5]"
METALS_OR_IONS = {"Li", "Na", "K", "Rb", "Cs", "Mg", "Ca", "Sr", "Ba"}


class LinkerUnit(BaseModel):
    model_config = ConfigDict(frozen=True)
    formula: str  # preferred spelling
    spellings: tuple[str, ...]  # every candidate spelling of the same composition
    composition: str  # Hill formula of the whole unit
    groups: dict[str, int]  # binding group kind -> count


def derive_linker(smiles: str) -> LinkerUnit | None:
    """The building unit of an organic linker, or None when it has no binding group."""
    mol = _main_fragment(smiles)
    if mol is None:
        return None
    chem, _ = rdkit()
    taken: set[int] = set()
    written: list[tuple[str, int]] = []
    groups: dict[str, int] = {}
    lost_h = 0
    for kind, text, smarts, acidic in BINDING_GROUPS:
        matches = [m for m in mol.GetSubstructMatches(chem.MolFromSmarts(smarts))
                   if not taken.intersection(m)]
        if matches:
            taken.update(a for m in matches for a in m)
            written.append((text, len(matches)))
            groups[kind] = len(matches)
            lost_h += acidic * len(matches) - sum(_charged_o(mol, m) for m in matches)
    rings = _azole_rings(mol, taken)
    if rings:
        ring_counts = composition(mol, set(rings[0]))
        ring_counts["H"] -= 1
        written.append((f"{hill(ring_counts)}", len(rings)))
        groups["azolate"] = len(rings)
        taken.update(a for ring in rings for a in ring)
    if not groups:
        return None
    core_atoms = {a.GetIdx() for a in mol.GetAtoms()} - taken
    whole = composition(mol)
    whole["H"] -= lost_h + len(rings)
    tail = "".join(f"({text})" + (str(n) if n > 1 else "") for text, n in written)
    spellings = tuple(dict.fromkeys(
        f"[{core}{tail}]" for core in (_written(Counter({hill(composition(mol, core_atoms)): 1})),
                                       _written(_ring_systems(mol, core_atoms)))))
    return LinkerUnit(formula=spellings[0], spellings=spellings, composition=hill(+whole),
                      groups=groups)


def _main_fragment(smiles: str):
    """The largest carbon-bearing fragment (counter-ions and solvent dropped); none with a
    metal other than an alkali or alkaline-earth counter-ion (a complex is no plain linker)."""
    mol = molecule(smiles)
    if mol is None:
        return None
    chem, _ = rdkit()
    fragments = [f for f in chem.GetMolFrags(mol, asMols=True)
                 if any(a.GetSymbol() == "C" for a in f.GetAtoms())]
    if not fragments:
        return None
    main = max(fragments, key=lambda f: f.GetNumHeavyAtoms())
    if any(_is_metal(a.GetSymbol()) for a in main.GetAtoms()):
        return None
    return main


def _is_metal(symbol: str) -> bool:
    return symbol not in {"H", "B", "C", "N", "O", "F", "Si", "P", "S", "Cl", "Se", "Br", "I",
                          "As", "Te"} and symbol not in METALS_OR_IONS and len(symbol) <= 2


def _charged_o(mol, atoms: tuple[int, ...]) -> int:
    """Deprotonated oxygens of a matched group (a carboxylate salt lost its H already)."""
    return sum(1 for a in atoms if mol.GetAtomWithIdx(a).GetFormalCharge() < 0)


def _azole_rings(mol, taken: set[int]) -> list[tuple[int, ...]]:
    chem, _ = rdkit()
    nh = {m[0] for m in mol.GetSubstructMatches(chem.MolFromSmarts(AZOLE_NH))}
    return [ring for ring in mol.GetRingInfo().AtomRings()
            if len(ring) == 5 and nh.intersection(ring) and not taken.intersection(ring)
            and sum(mol.GetAtomWithIdx(a).GetSymbol() == "N" for a in ring) >= 2]


def _ring_systems(mol, atoms: set[int]) -> Counter[str]:
    """The core cut at single bonds joining two ring systems, as Hill formulas with counts."""
    info = mol.GetRingInfo()
    system = {a: i for i, ring in enumerate(_fused(info.AtomRings())) for a in ring}
    parent = {a: a for a in atoms}

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for bond in mol.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a in atoms and b in atoms and not (
                a in system and b in system and system[a] != system[b]):
            parent[root(a)] = root(b)
    pieces: dict[int, set[int]] = {}
    for a in atoms:
        pieces.setdefault(root(a), set()).add(a)
    return Counter(hill(composition(mol, piece)) for piece in pieces.values())


def _fused(rings: tuple[tuple[int, ...], ...]) -> list[set[int]]:
    systems: list[set[int]] = []
    for ring in rings:
        merged = set(ring)
        for other in [s for s in systems if s & merged]:
            merged |= other
            systems.remove(other)
        systems.append(merged)
    return systems


def _written(pieces: Counter[str]) -> str:
    """Pieces in the notation's order: single pieces first, then by formula."""
    return "".join(f"({p})" + (str(n) if n > 1 else "")
                   for p, n in sorted(pieces.items(), key=lambda x: (x[1], x[0])))
