"""Chemistry benchmark: CBU derivation from the MOP-30 ground truth's precursor names, timings.

Usage: python scripts/bench_chemistry.py [--json]

Each MOP of `benchmarks/mop30/cbu` has two building-unit slots with the precursor names the
ground truth lists for them. A slot whose formula names a metal is a metal slot, the other an
organic slot. Organic: the names are parsed (OPSIN, the names voting), the linker unit derived,
and its composition (Hill formula of the whole unit) compared with the ground truth's; the
exact written form is reported too. Metal: the unit derived from the metal slot's names and the
partner linker is compared as written. The SBU table was written knowing this benchmark.
Timings: OPSIN start, OPSIN per name warm (median), RDKit per structure (median of describe +
derive), in this process.
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
from kgctl.chemistry.opsin import Opsin
from kgctl.chemistry.structure import describe
from kgctl.grounding.normalise import hill_formula

# metals of the ground truth's formulas (also those no family covers: W, Pd, ...)
METALS = {"Cu", "Zr", "V", "Fe", "Cr", "Mo", "Ni", "Co", "Mg", "W", "Pd", "Zn", "Rh"}
SYMBOL = re.compile(r"[A-Z][a-z]?")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
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


if __name__ == "__main__":
    main()
