"""Chemistry benchmark: CBU derivation from the MOP-30 ground truth's precursor names, timings.

Usage: python scripts/bench_chemistry.py [--json] [--reference DIR [--cache-dir DIR]]

Each MOP of `benchmarks/mop30/cbu` has two building-unit slots with the precursor names the
ground truth lists for them. A slot whose formula names a metal is a metal slot, the other an
organic slot. Organic: the names are parsed (OPSIN, the names voting), the linker unit derived,
and its composition (Hill formula of the whole unit) compared with the ground truth's; the
exact written form is reported too. Metal: the unit derived from the metal slot's names and the
partner linker is compared as written. The SBU table was written knowing this benchmark.
Timings: OPSIN start, OPSIN per name warm (median), RDKit per structure (median of describe +
derive), in this process.

With --reference (an embedded reference store, `kgctl reference build`): the ground truth's input
chemicals (names and stated formula, the surface forms of a paper entity) grounded by their names
alone (the baseline, as `kgctl ground`) and as `kgctl ground --structures --mint --dry-run`
decides them in the same run (structure tier, hydrate parents, species minted from agreeing
evidence; a chemical that parses to a species minted from another one grounds to it, in this
run or, if it came first, in a second run); the method each match is reported with (its
strongest evidence); and decisions made by a carbon formula alone (must be 0).
Timings also: the chemistry MCP server over stdio, spawn to `initialize` answered and to the
first tool answer (the JVM starts then).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from kgctl.assets import asset_dir
from kgctl.chemistry.cbu import derive_units
from kgctl.chemistry.formula import hill_formula
from kgctl.chemistry.linker import derive_linker
from kgctl.chemistry.opsin import Opsin
from kgctl.chemistry.structure import describe

# metals of the ground truth's formulas (also those no family covers: W, Pd, ...)
METALS = {"Cu", "Zr", "V", "Fe", "Cr", "Mo", "Ni", "Co", "Mg", "W", "Pd", "Zn", "Rh"}
SYMBOL = re.compile(r"[A-Z][a-z]?")
ORGANIC = re.compile(r"C(?![a-z])")  # a Hill formula with carbon starts with C
SERVER_RUNS = 3


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


def decisions(reference: Path, opsin: Opsin, cache_dir: Path) -> list[tuple[list[str], object]]:
    """(names, decision) of every ground-truth input chemical, decided as `kgctl ground
    --structures --mint --dry-run` would: the names and the stated formula are the entity's
    surface forms. Chemicals no tier grounds in the first pass are decided again, as a second
    run would, when the reference holds the species minted in the first."""
    from kgctl.chemistry.mint import Minter
    from kgctl.chemistry.tier import StructureTier
    from kgctl.grounding.commands import load_matcher
    from kgctl.grounding.materialise import decide

    matcher, spec = load_matcher("Species", endpoint=None, reference=reference,
                                 cache_dir=cache_dir, refresh=False)
    tier = StructureTier(matcher, opsin)
    minter = Minter(matcher, opsin, reference, dry_run=True)
    chemicals = input_chemicals(asset_dir("domains") / "mop30" / "benchmark" / "chemicals")
    found = []
    for run in (1, 2):
        for i, (names, formula) in enumerate(chemicals):
            if run == 2 and found[i][1].match is not None:
                continue
            forms = [*names, formula] if formula else names
            decision = decide(matcher, "bench", spec.sources[0], f"e{i}", forms,
                              structures=tier.lookup, mint=minter.mint)
            if run == 1:
                found.append((forms, decision, run))
            elif decision.match is not None:
                found[i] = (forms, decision, run)
    return found


def grounding(reference: Path, opsin: Opsin, cache_dir: Path) -> dict:
    """The production decision (`kgctl ground`) with and without the structure tier."""
    from kgctl.grounding.commands import load_matcher
    from kgctl.grounding.materialise import decide

    matcher, spec = load_matcher("Species", endpoint=None, reference=reference,
                                 cache_dir=cache_dir, refresh=False)
    plain = [decide(matcher, "bench", spec.sources[0], f"e{i}", [*n, f] if f else n).match
             for i, (n, f) in enumerate(
                 input_chemicals(asset_dir("domains") / "mop30" / "benchmark" / "chemicals"))]
    full = decisions(reference, opsin, cache_dir)
    methods = Counter(d.match.method for _, d, _ in full if d.match is not None)
    formula_only = sum(d.match is not None and d.match.method == "formula"
                       and ORGANIC.match(d.match.matched) is not None for _, d, _ in full)
    return {"input_chemicals": len(full), "grounded_by_names": sum(m is not None for m in plain),
            "grounded_or_minted": sum(d.match is not None for _, d, _ in full),
            "grounded_or_minted_first_run": sum(d.match is not None and r == 1
                                                for _, d, r in full),
            "methods": dict(sorted(methods.items())),
            "minted_species": len({d.match.iri for _, d, _ in full
                                   if d.match is not None and d.match.method == "minted"}),
            "formula_only_decisions": formula_only}


def server_start(runs: int = SERVER_RUNS) -> dict:
    """Median seconds from spawning `kgctl chem mcp` (stdio) to its answer to `initialize`, and
    to its first tool answer (parse_names, which starts the JVM)."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from kgctl.cli import main; main()", "chem", "mcp"])

    async def once() -> tuple[float, float]:
        started = time.perf_counter()
        async with Client(params) as client:
            initialized = time.perf_counter() - started
            await client.call_tool("parse_names", {"names": ["terephthalic acid"]})
            return initialized, time.perf_counter() - started

    times = [anyio.run(once) for _ in range(runs)]
    return {"server_initialize_s": round(statistics.median(t[0] for t in times), 2),
            "server_first_tool_s": round(statistics.median(t[1] for t in times), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reference", type=Path, help="embedded reference store folder")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/bench-chemistry-cache"),
                        help="grounding index cache (default: %(default)s)")
    args = parser.parse_args()
    all_slots = slots(asset_dir("domains") / "mop30" / "benchmark" / "cbu")
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
        grounded = grounding(args.reference, opsin, args.cache_dir) if args.reference else {}
    server = server_start()
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
        **server,
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
    print(f"chemistry MCP server (stdio, median of {SERVER_RUNS} starts): initialize answered "
          f"after {server['server_initialize_s']} s, first tool answer (JVM start included) "
          f"after {server['server_first_tool_s']} s")
    if grounded:
        c = grounded["input_chemicals"]
        named, full = grounded["grounded_by_names"], grounded["grounded_or_minted"]
        first = grounded["grounded_or_minted_first_run"]
        print(f"MOP-30 input chemicals: {c}; grounded by names {named} ({named / c:.3f}); "
              f"grounded or minted with a structure {full} ({full / c:.3f}; one run {first}, "
              f"{first / c:.3f}); {grounded['minted_species']} species minted; methods "
              f"{grounded['methods']}; carbon-formula-only decisions "
              f"{grounded['formula_only_decisions']}")


if __name__ == "__main__":
    main()
