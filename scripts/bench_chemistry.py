"""Chemistry benchmark: CBU derivation from the MOP-30 ground truth's precursor names, timings.

Usage: python scripts/bench_chemistry.py [--json] [--reference DIR]

Each MOP of `benchmarks/mop30/cbu` has two building-unit slots with the precursor names the
ground truth lists for them. A slot whose formula names a metal is a metal slot, the other an
organic slot. Organic: the names are parsed (OPSIN, the names voting), the linker unit derived,
and its composition (Hill formula of the whole unit) compared with the ground truth's; the
exact written form is reported too. Metal: the unit derived from the metal slot's names and the
partner linker is compared as written. The SBU table was written knowing this benchmark.
Timings: OPSIN start, OPSIN per name warm (median), RDKit per structure (median of describe +
derive), in this process.

With --reference (an embedded reference store, `kgctl reference build`): the ground truth's input
chemicals grounded by their names alone (the baseline, as `kgctl ground`) and with the
structure tier (`kgctl ground --structures`) in the same run; decisions made by a carbon formula
alone (must be 0); and the chemicals whose names parse, with agreeing evidence (two names, or a
stated formula), to a structure the reference lacks: the ones a minting step would add.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

from kgctl.assets import asset_dir
from kgctl.chemistry.cbu import derive_units
from kgctl.chemistry.linker import derive_linker
from kgctl.chemistry.names import resolve
from kgctl.chemistry.opsin import Opsin
from kgctl.chemistry.structure import describe
from kgctl.grounding.normalise import hill_formula

# metals of the ground truth's formulas (also those no family covers: W, Pd, ...)
METALS = {"Cu", "Zr", "V", "Fe", "Cr", "Mo", "Ni", "Co", "Mg", "W", "Pd", "Zn", "Rh"}
SYMBOL = re.compile(r"[A-Z][a-z]?")
ORGANIC = re.compile(r"C(?![a-z])")  # a Hill formula with carbon starts with C


def slots(folder: Path) -> list[dict]:
    found = []
    for path in sorted(folder.glob("*.json")):
        for mop in json.loads(path.read_text(encoding="utf-8"))["synthesisProcedures"]:
            for i, j in ((1, 2), (2, 1)):
                formula = (mop.get(f"cbuFormula{i}") or "").strip()
                if formula:
                    metal = any(s in METALS for s in SYMBOL.findall(formula))
                    found.append({"paper": path.stem, "formula": formula, "metal": metal,
                                  "names": mop.get(f"cbuSpeciesNames{i}") or [],
                                  "partner": mop.get(f"cbuSpeciesNames{j}") or []})
    return found


def input_chemicals(folder: Path) -> list[tuple[list[str], str | None]]:
    """(names, stated formula) of every input chemical of the ground truth."""
    found = []
    for path in sorted(folder.glob("*.json")):
        for proc in json.loads(path.read_text(encoding="utf-8")).get("synthesisProcedures", []):
            for step in proc.get("steps", []):
                for group in step.get("inputChemicals", []):
                    for chem in group.get("chemical", []):
                        names = [n for n in chem.get("chemicalName", []) if n and n != "N/A"]
                        formula = chem.get("chemicalFormula")
                        if names:
                            found.append((names, None if formula in (None, "N/A") else formula))
    return found


def grounding(reference: Path, opsin: Opsin) -> dict:
    """The production decision (`kgctl ground`) with and without the structure tier."""
    from kgctl.chemistry.tier import StructureTier
    from kgctl.grounding.commands import load_matcher
    from kgctl.grounding.materialise import decide

    matcher, spec = load_matcher("Species", endpoint=None, reference=reference,
                                 cache_dir=reference.parent / "bench-chemistry-cache",
                                 refresh=False)
    tier = StructureTier(matcher, opsin)
    chemicals = input_chemicals(asset_dir("benchmarks") / "mop30" / "chemicals")
    plain_n = full_n = hydrates = structures = formula_only = mintable = 0
    for i, (names, formula) in enumerate(chemicals):
        plain = decide(matcher, "bench", spec.sources[0], f"e{i}", names).match
        full = decide(matcher, "bench", spec.sources[0], f"e{i}", names,
                      structures=tier.lookup).match
        plain_n += plain is not None
        full_n += full is not None
        hydrates += full is not None and full.method == "hydrate"
        structures += full is not None and full.method == "structure"
        formula_only += (full is not None and full.method == "formula"
                         and ORGANIC.match(full.matched) is not None)
        if full is None:
            resolution = resolve(opsin, names)
            stated = hill_formula(formula) if formula else None
            mintable += resolution.structure is not None and not matcher.lookup_identifier(
                "inchikey", resolution.structure.inchikey) and (
                len(resolution.agreeing) >= 2 or stated == resolution.structure.formula)
    return {"input_chemicals": len(chemicals), "grounded_by_names": plain_n,
            "grounded_with_structures_and_hydrates": full_n, "decided_by_structure": structures,
            "hydrate_of_parent": hydrates, "formula_only_decisions": formula_only,
            "mintable_with_agreeing_evidence": mintable}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reference", type=Path, help="embedded reference store folder")
    args = parser.parse_args()
    all_slots = slots(asset_dir("benchmarks") / "mop30" / "cbu")
    organic = [s for s in all_slots if not s["metal"]]
    metal = [s for s in all_slots if s["metal"]]
    with Opsin() as opsin:
        started = time.perf_counter()
        opsin.smiles("methane")
        start_s = time.perf_counter() - started
        per_name, per_structure = [], []
        for slot in organic:
            for name in slot["names"]:
                t0 = time.perf_counter()
                smiles = opsin.smiles(name)
                per_name.append(time.perf_counter() - t0)
                if smiles:
                    t0 = time.perf_counter()
                    describe(smiles)
                    derive_linker(smiles)
                    per_structure.append(time.perf_counter() - t0)
        units = [derive_units(opsin, metal=s["partner"], linker=s["names"]) for s in organic]
        metal_units = [derive_units(opsin, metal=s["names"], linker=s["partner"]) for s in metal]
        grounded = grounding(args.reference, opsin) if args.reference else {}
    pairs = list(zip(organic, units, strict=True))
    composition = sum(u.linker is not None and u.linker.composition
                      == hill_formula(s["formula"].strip("[]")) for s, u in pairs)
    exact_any = sum(u.linker is not None and s["formula"] in u.linker.spellings
                    for s, u in pairs)
    exact_first = sum(u.linker is not None and s["formula"] == u.linker.formula
                      for s, u in pairs)
    named = [(s, u) for s, u in zip(metal, metal_units, strict=True) if s["names"]]
    metal_exact = sum(u.metal is not None and u.metal.unit == s["formula"] for s, u in named)
    figures = {
        "organic_slots": len(organic),
        "organic_parsed": sum(u.linker is not None for u in units),
        "organic_composition": composition,
        "organic_exact_any_spelling": exact_any,
        "organic_exact_first_spelling": exact_first,
        "metal_slots": len(metal),
        "metal_slots_with_names": len(named),
        "metal_exact": metal_exact,
        "opsin_start_s": round(start_s, 3),
        "opsin_per_name_ms": round(1000 * statistics.median(per_name), 2),
        "rdkit_per_structure_ms": round(1000 * statistics.median(per_structure), 2),
        **grounded,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    n, m, k = len(organic), len(metal), len(named)
    print("CBU derivation from MOP-30 ground-truth precursor names (SBU table written knowing "
          "this benchmark)")
    print(f"organic slots: {n}; parsed {figures['organic_parsed']}; right composition "
          f"{composition} ({composition / n:.3f}); exact written form: any candidate "
          f"{exact_any} ({exact_any / n:.3f}), first candidate {exact_first} "
          f"({exact_first / n:.3f})")
    print(f"metal slots: {m}, {k} with precursor names; exact {metal_exact} "
          f"({metal_exact / k:.3f} of named, {metal_exact / m:.3f} of all)")
    print(f"OPSIN start {start_s:.2f} s, per name warm {figures['opsin_per_name_ms']} ms "
          f"(median of {len(per_name)}); RDKit per structure "
          f"{figures['rdkit_per_structure_ms']} ms (median of {len(per_structure)})")
    if grounded:
        c = grounded["input_chemicals"]
        named = grounded["grounded_by_names"]
        structured = grounded["grounded_with_structures_and_hydrates"]
        mint = grounded["mintable_with_agreeing_evidence"]
        print(f"MOP-30 input chemicals: {c}; grounded by names {named} ({named / c:.3f}), with "
              f"the structure tier and hydrate parents {structured} ({structured / c:.3f}: "
              f"{grounded['decided_by_structure']} by structure, "
              f"{grounded['hydrate_of_parent']} hydrates of a parent); carbon-formula-only "
              f"decisions {grounded['formula_only_decisions']}; not in the reference but "
              f"mintable with agreeing evidence {mint} (grounded or mintable "
              f"{(structured + mint) / c:.3f})")


if __name__ == "__main__":
    main()
