"""A fixed-seed random sample of grounding decisions on the MOP-30 input chemicals, to check by
hand.

Usage: python scripts/sample_groundings.py --reference DIR [--cache-dir DIR] [--n 40]
       [--seed 20] [--verdicts FILE]

The decisions are those of `kgctl ground --structures --mint --dry-run` (as
scripts/bench_chemistry.py makes them); the sample is drawn from the grounded or minted ones and
printed as a tab-separated table (names, matched species, matched text, method, score, IRI).
With --verdicts (the same table with a `verdict` column, right or wrong, and a `note`), the
sample is checked against the file and the wrong ones are counted and listed.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path

from bench_chemistry import decisions

from kgctl.chemistry.opsin import Opsin

COLUMNS = ("names", "species", "matched", "method", "score", "iri")


def sample_rows(reference: Path, cache_dir: Path, *, n: int, seed: int) -> list[dict]:
    with Opsin() as opsin:
        found = decisions(reference, opsin, cache_dir)
    matched = sorted({(" | ".join(forms), d.match.label, d.match.matched, d.match.method,
                       f"{d.match.score:.1f}", d.match.iri)
                      for forms, d, _ in found if d.match is not None})
    return [dict(zip(COLUMNS, row, strict=True))
            for row in random.Random(seed).sample(matched, min(n, len(matched)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/bench-chemistry-cache"))
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--verdicts", type=Path, help="the sample with checked verdicts")
    args = parser.parse_args()
    rows = sample_rows(args.reference, args.cache_dir, n=args.n, seed=args.seed)
    if args.verdicts is None:
        out = csv.DictWriter(sys.stdout, COLUMNS, delimiter="\t", lineterminator="\n")
        out.writeheader()
        out.writerows(rows)
        return
    with args.verdicts.open(encoding="utf-8") as handle:
        checked = list(csv.DictReader(handle, delimiter="\t"))
    if [{c: r[c] for c in COLUMNS} for r in checked] != rows:
        sys.exit(f"error: {args.verdicts} is not this sample (regenerate it and check again)")
    wrong = [r for r in checked if r["verdict"] == "wrong"]
    print(f"{len(checked)} decisions checked by hand, {len(wrong)} wrong")
    for r in wrong:
        print(f"  {r['names']} -> {r['species']} ({r['method']}): {r['note']}")


if __name__ == "__main__":
    main()
