"""Formula parser against RDKit: disagreements on every parsed MOP-30 structure and on a
generated set of structures.

Usage: python scripts/bench_formulas.py [--generated N] [--seed S]

MOP-30 structures: every chemical name of the pack's benchmark (input and output chemicals,
building-unit precursors) that OPSIN parses to a structure RDKit reads. Generated: N random
structures (isotopes, charges, salts, hydrates; tests/formula_helpers.py). Each structure's
formula is written in every spelling the parser reads (RDKit's own text, scrambled element
order with split counts, each charge spelling, salt and hydrate parts) and parsed; a
disagreement is a spelling whose Hill formula differs from RDKit's formula of the structure in
strict Hill order. Prints the counts and the first disagreements; exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from formula_helpers import random_molecule, spellings, strict_hill  # noqa: E402
from rdkit import Chem  # noqa: E402

from kgctl.chemistry.formula import hill_formula  # noqa: E402
from kgctl.chemistry.opsin import Opsin  # noqa: E402
from kgctl.packs import load_pack  # noqa: E402

NAME_KEYS = ("chemicalName", "names", "cbuSpeciesNames1", "cbuSpeciesNames2")
SHOWN = 10


def benchmark_names(folder: Path) -> list[str]:
    """Every chemical name in the benchmark's JSON records, once each."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in NAME_KEYS and isinstance(value, list):
                    names.update(n.strip() for n in value if isinstance(n, str) and n.strip())
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for path in sorted(folder.rglob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return sorted(names - {"N/A"})


def mop30_structures(names: list[str]) -> list:
    """The distinct structures (RDKit molecules) OPSIN finds for `names`."""
    found = {}
    with Opsin() as opsin:
        for name in names:
            smiles = opsin.smiles(name)
            mol = Chem.MolFromSmiles(smiles) if smiles else None
            if mol is not None:
                found.setdefault(Chem.MolToSmiles(mol), mol)
    return list(found.values())


def disagreements(mols: list, rnd: random.Random) -> tuple[int, list[tuple[str, str, str]]]:
    """(spellings parsed, [(spelling, ours, expected)] where they differ)."""
    parsed, wrong = 0, []
    for mol in mols:
        expected = strict_hill(mol)
        for text in spellings(mol, rnd):
            parsed += 1
            ours = hill_formula(text)
            if ours != expected:
                wrong.append((text, str(ours), expected))
    return parsed, wrong


def report(label: str, mols: list, rnd: random.Random) -> int:
    parsed, wrong = disagreements(mols, rnd)
    print(f"{label}: {len(mols)} structures, {parsed} formulas parsed, "
          f"{len(wrong)} disagreements with RDKit")
    for text, ours, expected in wrong[:SHOWN]:
        print(f"  {text!r}: ours {ours}, RDKit {expected}")
    return len(wrong)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=1000, help="random structures")
    parser.add_argument("--seed", type=int, default=31)
    options = parser.parse_args()
    rnd = random.Random(options.seed)
    names = benchmark_names(load_pack("mop30").root / "benchmark")
    mop30 = mop30_structures(names)
    print(f"MOP-30 names: {len(names)}, parsed by OPSIN to {len(mop30)} distinct structures")
    generated = []
    while len(generated) < options.generated:
        mol = random_molecule(rnd)
        if mol is not None:
            generated.append(mol)
    wrong = report("MOP-30", mop30, rnd) + report("generated", generated, rnd)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
