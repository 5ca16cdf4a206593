"""Scale benchmark of the deduplication core: synthetic mentions across papers.

Prints, for 10k / 100k / 1M mentions (10,000 papers at the top size), the clustering time, the
time per mention, peak RSS, and the ratio against a baseline measured in the same run: grouping
the same mentions by their exact lower-cased first label (the cheapest possible "dedup").

    python scripts/bench_dedup.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from kgctl.dedup.cluster import Mention, Thresholds, cluster

SEED = 7
CHEMICALS = 20_000  # distinct chemicals in the synthetic world
PAPERS = 10_000
VARIANTS = ("{}", "{} ", "{}".upper(), "N, N-{}", "{}-hydrate")
STEMS = ("methyl", "ethyl", "propyl", "butyl", "phenyl", "benzyl", "chloro", "bromo", "nitro",
         "amino", "hydroxy", "carboxy", "formyl", "oxo", "cyano", "fluoro")
CORES = ("benzene", "pyridine", "formamide", "acetamide", "imidazole", "terephthalate",
         "isophthalate", "acetate", "nitrate", "sulfate", "chloride", "oxide")


def world(rng: random.Random) -> list[tuple[str, str, str]]:
    """(name, formula, inchikey-like key) per synthetic chemical; locants make near-twins."""
    out = []
    for i in range(CHEMICALS):
        locant = f"{rng.randint(1, 6)},{rng.randint(2, 9)}-"
        name = locant + "".join(rng.sample(STEMS, 2)) + rng.choice(CORES) + f" {i}"
        formula = f"C{rng.randint(1, 30)}H{rng.randint(1, 40)}O{rng.randint(0, 8)}"
        key = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(14))
        out.append((name, formula, f"{key}-UHFFFAOYSA-N"))
    return out


def mentions(n: int, rng: random.Random, chems: list[tuple[str, str, str]]) -> list[Mention]:
    out = []
    for i in range(n):
        name, formula, inchikey = chems[min(int(rng.paretovariate(1.2)) - 1, CHEMICALS - 1)
                                        if rng.random() < 0.5 else rng.randrange(CHEMICALS)]
        label = rng.choice(VARIANTS).format(name)
        keys = [("formula", formula)]
        if rng.random() < 0.3:
            keys.append(("inchikey", inchikey))
        paper = f"p{i % PAPERS}"
        out.append(Mention(iri=f"{paper}#m{i}", paper=paper, labels=(label,), keys=tuple(keys)))
    return out


def baseline(ms: list[Mention]) -> int:
    groups: dict[str, list[str]] = {}
    for m in ms:
        groups.setdefault(m.labels[0].lower(), []).append(m.iri)
    return len(groups)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    rng = random.Random(SEED)
    chems = world(rng)
    print(f"{'mentions':>9} {'clusters':>9} {'grey':>6} {'refused':>8} {'dedup s':>8} "
          f"{'us/mention':>10} {'baseline s':>10} {'ratio':>6} {'peak RSS MiB':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        ms = mentions(size, rng, chems)
        t0 = time.perf_counter()
        groups = baseline(ms)
        t_base = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = cluster(ms, Thresholds())
        t_dedup = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{size:>9} {len(result.clusters):>9} {len(result.grey):>6} "
              f"{len(result.refused):>8} {t_dedup:>8.2f} {t_dedup / size * 1e6:>10.2f} "
              f"{t_base:>10.3f} {t_dedup / t_base:>6.1f} {rss:>12.0f}  (exact groups {groups})")


if __name__ == "__main__":
    main()
