"""Out-of-core dedup at scale: synthetic mentions with a chemical-like vocabulary.

    python scripts/bench_dedup_scale.py compare --mentions 1000000 --vocab 100000
        both engines on the same mentions: time, peak RSS, and whether clusters, merges, review
        pairs and refusals are identical
    python scripts/bench_dedup_scale.py scale --mentions 20000000 --vocab 1000000 --memory 2GB
        writes the mentions to Parquet in batches (one process), then clusters them out of core
        (another process) and prints its time, peak RSS and memory_limit
    python scripts/bench_dedup_scale.py incremental --existing 100000,1000000 --new 1000,4000
        k new mentions clustered into a kept state of N earlier ones (kgctl.dedup.incremental):
        time per N and k (the median of --repeat adds), and the ratios (--per-entity 10: a
        vocabulary growing with N)
    python scripts/bench_dedup_scale.py canonical --existing 1000000
        the time to assign canonical IRIs to new clusters against existing links, per new count
    python scripts/bench_dedup_scale.py distributed --mentions 1000000 --vocab 100000
        the same mentions out of core here, then with fuzzy blocks and parts on 1 and 2 local
        Dask worker processes (--workers 1,2): each phase's time and the ratio to the first run,
        and whether the results are identical

The vocabulary: names built from chemical syllables with locants and hydration words; a share of
chemicals has an isomer twin (another locant: never merged automatically) and a share of
mentions is misspelt by one letter (merged by the fuzzy step). Keys: a formula (conflict key) on
every chemical, an InChIKey-like key (merge and conflict key) on 30% of mentions; one chemical
in a thousand shares a name with another of a different formula (the merge is refused).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import duckdb
import numpy as np

from kgctl.dedup.cluster import Cluster, Mention, Thresholds, cluster
from kgctl.dedup.incremental import State
from kgctl.dedup.job import ENTITY_BASE, canonical_iris
from kgctl.dedup.outofcore import ORDER, OutOfCore
from kgctl.dedup.spec import DedupSpec
from kgctl.dedup.tables import stream

SEED = 11
THRESHOLDS = Thresholds(merge_keys=("inchikey",), conflict_keys=("formula", "inchikey"))
PARTS = ("meth", "eth", "prop", "but", "pent", "hex", "hept", "oct", "benz", "pyrid", "imidaz",
         "thioph", "fur", "pyrrol", "naphth", "anthr", "phen", "tolu", "xyl", "cycl")
MIDDLES = ("yl", "oxy", "amino", "chloro", "bromo", "fluoro", "nitro", "hydroxy", "carboxy",
           "formyl", "cyano", "sulfonyl", "acetyl", "methoxy", "ethynyl", "vinyl")
ENDS = ("ene", "ine", "ole", "ane", "ol", "one", "al", "ate", "ide", "amide", "ic acid",
        "oate", "ium chloride", "yl nitrate", "amine", "azole")
VARIANTS = ("{}", "{}", "{} ", "UPPER", "N, N-{}", "TYPO")
BATCH = 500_000


@lru_cache(maxsize=1 << 21)
def chemical(i: int, vocab: int) -> tuple[str, str, str]:
    """Name, formula and InChIKey-like key of chemical number i (deterministic)."""
    rng = random.Random(i * 7919 + vocab)
    twin = i % 50 == 1  # an isomer of chemical i-1: same name but another locant
    base = random.Random((i - 1 if twin else i) * 7919 + vocab)
    body = "".join(base.choice(PARTS) + base.choice(MIDDLES) for _ in range(base.randint(1, 3)))
    name = f"{rng.randint(1, 6)},{rng.randint(2, 9)}-{body}{base.choice(ENDS)}"
    if i % 1000 == 7:  # same name as another chemical, different formula: a refused merge
        name = chemical(i - 1, vocab)[0]
    formula = f"C{rng.randint(1, 40)}H{rng.randint(1, 60)}N{rng.randint(0, 6)}O{i % 9}"
    key = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(14))
    return name, formula, f"{key}-{i:08d}"


def mention_rows(n: int, vocab: int, papers: int, start: int = 0):
    """(iri, paper, label, keys) of mentions start..start+n, streamed: chemicals drawn half
    Zipf-like, half uniform."""
    rng = random.Random(SEED + start)
    for i in range(start, start + n):
        c = (min(int(rng.paretovariate(1.1)) - 1, vocab - 1) if rng.random() < 0.5
             else rng.randrange(vocab))
        name, formula, inchikey = chemical(c, vocab)
        variant = rng.choice(VARIANTS)
        if variant == "UPPER":
            label = name.upper()
        elif variant == "TYPO" and len(name) > 24:
            k = rng.randrange(3, len(name))
            label = name[:k] + name[k + 1:]
        else:
            label = variant.replace("TYPO", "{}").format(name)
        keys = [("formula", formula)] + ([("inchikey", inchikey)] if rng.random() < 0.3 else [])
        paper = f"p{i % papers}"
        yield f"https://example.org/{paper}/m{i}", paper, label, keys


def mentions(n: int, vocab: int, papers: int, start: int = 0) -> list[Mention]:
    return [Mention(iri=iri, paper=paper, labels=(label,), keys=tuple(keys))
            for iri, paper, label, keys in mention_rows(n, vocab, papers, start)]


def write_parquet(out: Path, n: int, vocab: int, papers: int) -> None:
    """The mentions as Parquet files of BATCH rows (constant memory)."""
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    for part, start in enumerate(range(0, n, BATCH)):
        batch = list(mention_rows(min(BATCH, n - start), vocab, papers, start))
        rows = {name: np.empty(len(batch), dtype=object) for name in ("iri", "paper", "labels",
                                                                     "keys")}
        rows["iri"][:] = [m[0] for m in batch]
        rows["paper"][:] = [m[1] for m in batch]
        rows["labels"][:] = [[m[2]] for m in batch]
        rows["keys"][:] = [[{"kind": k, "value": v} for k, v in m[3]] for m in batch]
        con.register("rows_in", rows)
        con.execute(f"COPY (SELECT iri, paper, labels::VARCHAR[] AS labels, "
                    f"keys::STRUCT(kind VARCHAR, value VARCHAR)[] AS keys FROM rows_in) "
                    f"TO '{out}/part-{part:04d}.parquet' (FORMAT parquet)")
        con.unregister("rows_in")


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compare(args) -> None:
    ms = mentions(args.mentions, args.vocab, args.papers)
    t0 = time.perf_counter()
    mem = cluster(ms, THRESHOLDS)
    t_mem = time.perf_counter() - t0
    rss_mem = peak_mib()
    t0 = time.perf_counter()
    with OutOfCore(memory_limit=args.memory) as engine:
        engine.add(ms)
        engine.run(THRESHOLDS)
        ooc = engine.result()
        rounds = engine.rounds
    t_ooc = time.perf_counter() - t0
    print(f"{args.mentions} mentions, vocabulary {args.vocab}: {len(mem.clusters)} clusters, "
          f"{len(mem.decisions)} merges, {len(mem.grey)} for review, {len(mem.refused)} refused")
    print(f"  memory engine: {t_mem:.1f} s (peak RSS {rss_mem:.0f} MiB after it)")
    print(f"  duckdb engine: {t_ooc:.1f} s, {rounds} propagation rounds, memory_limit "
          f"{args.memory}")
    for what in ("clusters", "decisions", "grey", "refused"):
        same = getattr(mem, what) == getattr(ooc, what)
        print(f"  identical {what}: {same} ({len(getattr(ooc, what))})")


def scale(args) -> None:
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        data = Path(args.data) if args.data else Path(tmp) / "mentions"
        if not args.data:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, __file__, "_generate", str(data),
                            str(args.mentions), str(args.vocab), str(args.papers)], check=True)
            print(f"generated {args.mentions} mentions (vocabulary {args.vocab}) as Parquet in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
        subprocess.run([sys.executable, __file__, "_cluster", str(data), args.memory,
                        str(Path(tmp) / "engine")], check=True)


def _cluster_files(data: str, memory: str, workdir: str) -> None:
    """Cluster, then stream every (cluster, member) link as a writer of links would."""
    t0 = time.perf_counter()
    with OutOfCore(Path(workdir), memory_limit=memory) as engine:
        engine.add_parquet(f"{data}/*.parquet")
        n = engine.con.execute("SELECT count(*) FROM mention").fetchall()[0][0]
        engine.run(THRESHOLDS, progress=lambda phase: print(
            f"  {time.perf_counter() - t0:6.0f} s  {phase} (peak RSS so far {peak_mib():.0f} MiB)",
            flush=True))
        counts = dict(engine.con.execute(
            "SELECT kind, count(*) FROM decision GROUP BY kind").fetchall())
        clusters = merged = links = largest = 0
        for _, group in groupby(engine.links(), key=itemgetter(0)):
            size = sum(1 for _ in group)
            clusters += 1
            merged += size > 1
            links += size
            largest = max(largest, size)
        spilled = sum(f.stat().st_size for f in Path(workdir).rglob("*"))
    print(f"  {time.perf_counter() - t0:6.0f} s  links read out (peak RSS so far "
          f"{peak_mib():.0f} MiB)")
    print(f"clustered {n} mentions out of core in {time.perf_counter() - t0:.0f} s: {clusters} "
          f"clusters ({merged} with more than one mention, the largest {largest}), {links} "
          f"links, {counts.get('decision', 0)} merges, {counts.get('grey', 0)} for review, "
          f"{counts.get('refused', 0)} refused; {engine.rounds} propagation rounds")
    print(f"memory_limit {memory}; peak RSS {peak_mib():.0f} MiB; "
          f"database + spill on disk {spilled / 2**30:.1f} GiB", flush=True)


def incremental(args) -> None:
    """k new mentions clustered into a kept state of N earlier ones, for two N and two k."""
    sizes = [int(n) for n in args.existing.split(",")]
    news = [int(k) for k in args.new.split(",")]
    times: dict[tuple[int, int], float] = {}
    redone: dict[tuple[int, int], int] = {}
    for n in sizes:
        vocab = n // args.per_entity if args.per_entity else args.vocab
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            t0 = time.perf_counter()
            with State(Path(tmp) / "state.duckdb", THRESHOLDS) as state:
                state.add(mentions(n, vocab, args.papers))
                parts, largest = state.con.execute(
                    "SELECT count(*), max(c) FROM (SELECT count(*) AS c FROM profile "
                    "GROUP BY part)").fetchall()[0]
                print(f"{n} existing mentions (vocabulary {vocab}) clustered into the state "
                      f"in {time.perf_counter() - t0:.0f} s: {parts} parts, the largest of "
                      f"{largest} profiles", flush=True)
                start = n
                for k in news:
                    runs = []  # (time, profiles) of each add of k other mentions
                    for _ in range(args.repeat):
                        new = mentions(k, vocab, args.papers, start)
                        start += k
                        t0 = time.perf_counter()
                        redone_k = state.add(new)
                        runs.append((time.perf_counter() - t0, redone_k))
                    times[n, k] = sorted(t for t, _ in runs)[len(runs) // 2]
                    redone[n, k] = sorted(r for _, r in runs)[len(runs) // 2]
                    print(f"  +{k} new mentions: {times[n, k]:.2f} s ({redone[n, k]} profiles "
                          f"re-clustered), the median of "
                          f"{', '.join(f'{t:.2f} s ({r})' for t, r in runs)}", flush=True)
    for k in news:
        for n in sizes[1:]:
            a, b = (n, k), (sizes[0], k)
            print(f"{k} new mentions: {times[a]:.2f} s against {n} existing, {times[b]:.2f} s "
                  f"against {sizes[0]}: ratio {times[a] / times[b]:.2f} for {n / sizes[0]:.0f}x "
                  f"the corpus (profiles re-clustered: ratio {redone[a] / redone[b]:.2f})")
    for n in sizes:
        ratio = times[n, news[-1]] / times[n, news[0]]
        print(f"against {n}: {news[-1]} new mentions take {ratio:.2f}x the time of {news[0]} "
              f"({news[-1] / news[0]:.0f}x the mentions)")


def canonical(args) -> None:
    """Canonical IRIs of new clusters against earlier links: every new cluster has the name of
    an earlier entity and shares it with others, so each minted IRI collides and is numbered."""
    spec = DedupSpec(name="chemical", classes=("https://example.org/C",), labels=())
    base = f"{ENTITY_BASE}chemical/"
    existing = int(args.existing.split(",")[-1])
    old = {f"https://example.org/m{i}": f"{base}name-{i // 2}" for i in range(existing)}
    used = set(old.values())  # made once per run, with the links read from the store
    print(f"canonical IRIs for new clusters against {existing} existing links "
          f"({len(used)} canonical IRIs)")
    for n in (500, 2000, 8000, 32000):
        new = [Cluster(members=[f"https://example.org/new{i}"], keys={},
                       labels=[f"name {i % (n // 4)}"]) for i in range(n)]
        t0 = time.perf_counter()
        canonical_iris(spec, new, old, used)
        dt = time.perf_counter() - t0
        print(f"  {n:6} new clusters: {dt * 1000:8.1f} ms ({dt / n * 1e6:.1f} us per cluster)")


def distributed(args) -> None:
    """One Parquet data set clustered out of core by this process alone, then with a Dask
    cluster of each size in --workers (the cluster's start not counted)."""
    from kgctl.dedup.groups import dask_client

    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    runs = {}
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        write_parquet(Path(tmp) / "mentions", args.mentions, args.vocab, args.papers)
        for n in (0, *(int(w) for w in args.workers.split(","))):
            with dask_client(workers=n or None) as client:
                name = f"{n} Dask worker{'s' * (n > 1)}" if n else "this process alone"
                runs[name] = _phases(f"{tmp}/mentions/*.parquet", args.memory, client)
                print(f"{name}: {sum(w for w, _ in runs[name][0].values()):.0f} s", flush=True)
    (base, _, digest), *_ = runs.values()
    print(f"{args.mentions} mentions, vocabulary {args.vocab}: per phase, wall seconds (ratio "
          f"to this process alone) and this process's CPU seconds; the share of the first run")
    print(f"{'phase':9}" + "".join(f"{name:>27}" for name in runs))
    for phase in ("total", *base):
        cells = []
        for times, _, _ in runs.values():
            wall, cpu = (map(sum, zip(*times.values(), strict=True)) if phase == "total"
                         else times[phase])
            first = sum(w for w, _ in base.values()) if phase == "total" else base[phase][0]
            cells.append(f"{wall:7.1f} ({wall / first:4.2f}) {cpu:7.1f}")
        share = base[phase][0] / sum(w for w, _ in base.values()) if phase in base else 1
        print(f"{phase:9}{cells[0]:>22} {share:4.0%}" + "".join(f"{c:>27}" for c in cells[1:]))
    for name, (_, counts, other) in runs.items():
        print(f"  {name}: {counts}; identical to this process alone: {other == digest}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    assert all(other == digest for _, _, other in runs.values()), "results differ"


def _phases(pattern: str, memory: str, client) -> tuple[dict[str, tuple[float, float]], str,
                                                       str]:
    """(wall, CPU) seconds per phase, the counts, and a digest of every cluster, merge, review
    pair and refusal in order."""
    times: dict[str, tuple[float, float]] = {}
    last = [(None, time.perf_counter(), time.process_time())]

    def progress(name: str | None) -> None:
        phase, wall, cpu = last[0]
        if phase not in (None, "done"):
            times[phase] = (time.perf_counter() - wall, time.process_time() - cpu)
        last[0] = (name, time.perf_counter(), time.process_time())

    with OutOfCore(memory_limit=memory, client=client) as engine:
        progress("load")
        engine.add_parquet(pattern)
        engine.run(THRESHOLDS, progress=progress)
        progress("read-out")
        digest = hashlib.sha256()
        clusters = 0
        for c in engine.clusters():
            digest.update(repr((c.members, c.labels, sorted(c.keys.items()))).encode())
            clusters += 1
        kinds: dict[str, int] = {}
        for row in stream(engine.con, "SELECT kind, a, b, score, method, evidence FROM decision "
                                      f"ORDER BY kind, {ORDER}"):
            digest.update(repr(row).encode())
            kinds[row[0]] = kinds.get(row[0], 0) + 1
        progress(None)
    counts = (f"{clusters} clusters, {kinds.get('decision', 0)} merges, "
              f"{kinds.get('grey', 0)} for review, {kinds.get('refused', 0)} refused")
    return times, counts, digest.hexdigest()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_generate":
        data, n, vocab, papers = sys.argv[2:6]
        write_parquet(Path(data), int(n), int(vocab), int(papers))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_cluster":
        _cluster_files(*sys.argv[2:5])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("compare", "scale", "incremental", "canonical",
                                         "distributed"))
    parser.add_argument("--mentions", type=int, default=1_000_000)
    parser.add_argument("--vocab", type=int, default=100_000)
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--memory", default="2GB", help="DuckDB memory_limit")
    parser.add_argument("--existing", default="100000,1000000",
                        help="incremental: sizes of the kept corpus; canonical: the last")
    parser.add_argument("--new", default="1000,4000", help="incremental: new mentions added")
    parser.add_argument("--repeat", type=int, default=3,
                        help="incremental: adds of k new mentions per size (the median is kept)")
    parser.add_argument("--per-entity", type=int, default=0,
                        help="incremental: a vocabulary of N / this for each corpus size N "
                             "(default: --vocab for all)")
    parser.add_argument("--workers", default="1,2",
                        help="distributed: sizes of the local Dask clusters")
    parser.add_argument("--workdir", default=None, help="where the database and spill go")
    parser.add_argument("--data", default=None,
                        help="scale: Parquet mentions written before (by `_generate`)")
    args = parser.parse_args()
    {"compare": compare, "scale": scale, "incremental": incremental,
     "canonical": canonical, "distributed": distributed}[args.what](args)


if __name__ == "__main__":
    main()
