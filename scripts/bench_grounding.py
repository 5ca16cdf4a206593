"""Grounding benchmark: build, harvest, cache load, lookup speed and accuracy against baselines.

Usage: python scripts/bench_grounding.py [--work DIR] [--heldout N]

Accuracy baselines measured in the same run: exact match after lower-casing, and difflib
(ratio cutoff 0.6, top-1). Held-out set: N synonyms removed from the index, then perturbed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import shutil
import time
from collections import defaultdict
from pathlib import Path

from kgctl.assets import asset_dir
from kgctl.grounding.abbreviations import table as abbreviation_table
from kgctl.grounding.harvest import harvest_rows, load_cache, save_cache
from kgctl.grounding.index import LabelIndex
from kgctl.grounding.matcher import Matcher, vote
from kgctl.grounding.normalise import GREEK, canonical_identifier
from kgctl.grounding.reference import build_reference, read_rows, table_paths
from kgctl.grounding.server import start_server, stop_server
from kgctl.grounding.sources import EndpointSource
from kgctl.grounding.spec import load_spec

SEED = 6
LOOKUPS = 3000
DIFFLIB_SAMPLE = 100  # difflib scans all 712k labels per name (~3 s each)


def perturb(name: str, rng: random.Random) -> str:
    """One spelling variant: case, spacing, dashes, brackets, Greek, hydrate notation."""
    variants = [name.upper(), name.title(), name.replace("-", "\u2013"),
                name.replace(",", ", "), name.replace("(", "[").replace(")", "]"),
                "  " + name.replace(" ", "  ") + " "]
    for letter, word in GREEK.items():
        if word in name:
            variants.append(name.replace(word, letter))
    for word, n in (("monohydrate", 1), ("dihydrate", 2), ("trihydrate", 3),
                    ("tetrahydrate", 4), ("hexahydrate", 6)):
        if name.endswith(" " + word):
            variants.append(name[: -len(word) - 1] + f"·{n}H2O")
    return rng.choice(variants)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/kgctl-bench-grounding"))
    parser.add_argument("--heldout", type=int, default=2000)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    spec = load_spec("species")
    rng = random.Random(SEED)

    t = time.perf_counter()
    rows = list(read_rows(table_paths()))
    store = args.work / "reference"
    build_reference(store, rows)
    print(f"reference build: {len(rows)} species, {time.perf_counter() - t:.1f} s (limit 60 s)")

    process, url = start_server(store)
    try:
        t = time.perf_counter()
        harvested = harvest_rows(EndpointSource(url), spec, partial=args.work / "partial")
        harvest_s = time.perf_counter() - t
    finally:
        stop_server(process)
    labels = sum(1 for r in harvested if r[1].startswith("label:"))
    print(f"harvest over HTTP: {len(harvested)} rows, {labels} labels, {harvest_s:.1f} s "
          "(limit 60 s)")

    # held-out: synonyms of species that keep other labels, removed from the index
    by_entity: dict[str, list[int]] = defaultdict(list)
    for i, (s, f, v) in enumerate(harvested):
        if f == "label:1" and v and canonical_identifier("cas", v) is None:
            by_entity[s].append(i)
    owners: dict[str, set[str]] = defaultdict(set)
    for s, f, v in harvested:
        if f.startswith("label:") and v:
            owners[v.casefold()].add(s)
    pool = [(s, i) for s, ids in by_entity.items() if len(ids) >= 2 for i in ids
            if len(owners[harvested[i][2].casefold()]) == 1]
    heldout = rng.sample(pool, args.heldout)
    removed = {i for _, i in heldout}
    t = time.perf_counter()
    index = LabelIndex.build(r for i, r in enumerate(harvested) if i not in removed)
    print(f"index build: {index.summary()}, {time.perf_counter() - t:.1f} s")
    cache = args.work / "species.index"
    save_cache(cache, index)
    t = time.perf_counter()
    index = load_cache(cache)
    print(f"cache load: {time.perf_counter() - t:.2f} s (limit 3 s)")

    queries = [(perturb(harvested[i][2], rng), s) for s, i in heldout]
    scorers = {}
    from rapidfuzz import fuzz
    for name, scorer in (("ratio", fuzz.ratio), ("token_sort_ratio", fuzz.token_sort_ratio),
                         ("WRatio", fuzz.WRatio)):
        matcher = Matcher(index, spec.thresholds, scorer=scorer)
        scorers[name] = evaluate(matcher, queries)
        print(f"kgctl matcher [{name}]: " + json.dumps(scorers[name]))
    matcher = Matcher(index, spec.thresholds)

    lower = defaultdict(set)
    for s, f, v in harvested:
        if f.startswith("label:") and v:
            lower[v.casefold()].add(s)
    for i in removed:
        s, _, v = harvested[i]
        lower[v.casefold()].discard(s)
    exact_ok = sum(lower.get(q.casefold()) == {s} for q, s in queries)
    exact_wrong = sum(bool(lower.get(q.casefold())) and lower.get(q.casefold()) != {s}
                      for q, s in queries)
    print(f"baseline exact lower-case: top-1 {exact_ok / len(queries):.3f}, wrong "
          f"{exact_wrong / len(queries):.3f}")
    keys = [k for k, v in lower.items() if v]
    sample = queries[:DIFFLIB_SAMPLE]
    t = time.perf_counter()
    dl_ok = dl_wrong = 0
    for q, s in sample:
        hit = difflib.get_close_matches(q.casefold(), keys, n=1, cutoff=0.6)
        if hit:
            dl_ok += s in lower[hit[0]] and len(lower[hit[0]]) == 1
            dl_wrong += not (s in lower[hit[0]] and len(lower[hit[0]]) == 1)
    print(f"baseline difflib 0.6 top-1 (n={len(sample)}): top-1 {dl_ok / len(sample):.3f}, "
          f"wrong {dl_wrong / len(sample):.3f}, {len(sample) / (time.perf_counter() - t):.1f} "
          "names/s")
    ours = evaluate(matcher, sample)
    print(f"kgctl on the same difflib sample: top-1 {ours['top1']:.3f}, "
          f"wrong {ours['wrong']:.3f}")

    names = [q for q, _ in queries] * (LOOKUPS // len(queries) + 1)
    t = time.perf_counter()
    for q in names[:LOOKUPS]:
        matcher.lookup(q, k=10)
    rate = LOOKUPS / (time.perf_counter() - t)
    print(f"lookup speed: {rate:.0f} names/s with top-10 candidates (target >= 1000)")

    missing = [e for _, e, _ in abbreviation_table() if matcher.lookup(e).match is None]
    print(f"abbreviation expansions not found as reference labels: {missing}")
    mop30(matcher)


def evaluate(matcher: Matcher, queries: list[tuple[str, str]]) -> dict:
    top1 = accepted_right = accepted_wrong = 0
    for q, s in queries:
        result = matcher.lookup(q)
        top1 += bool(result.candidates) and result.candidates[0].iri == s
        if result.match is not None:
            accepted_right += result.match.iri == s
            accepted_wrong += result.match.iri != s
    n = len(queries)
    return {"n": n, "top1": round(top1 / n, 4), "accepted": round(accepted_right / n, 4),
            "wrong": round(accepted_wrong / n, 4),
            "abstained": round((n - accepted_right - accepted_wrong) / n, 4)}


def mop30(matcher: Matcher) -> None:
    chemicals = []
    for path in sorted((asset_dir("benchmarks") / "mop30" / "chemicals").glob("*.json")):
        data = json.loads(path.read_text())
        for proc in data.get("synthesisProcedures", []):
            for step in proc.get("steps", []):
                for group in step.get("inputChemicals", []):
                    for chem in group.get("chemical", []):
                        names = [n for n in chem.get("chemicalName", []) if n and n != "N/A"]
                        if names:
                            chemicals.append(names)
    grounded = consistent = multi = 0
    for names in chemicals:
        results = [matcher.lookup(n) for n in names]
        match, _ = vote(results)
        grounded += match is not None
        hits = {r.match.iri for r in results if r.match is not None}
        if sum(r.match is not None for r in results) >= 2:
            multi += 1
            consistent += len(hits) == 1
    print(f"MOP-30 input chemicals: {len(chemicals)}, grounded {grounded / len(chemicals):.3f}; "
          f"consistency {consistent}/{multi} chemicals with >= 2 grounded names")


if __name__ == "__main__":
    main()
