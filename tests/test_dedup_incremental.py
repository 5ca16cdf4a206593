"""Clustering mentions batch by batch through the kept state gives what clustering them all at
once gives: clusters, merges, refusals and review pairs, with reviews, conflicts, near-twins and
blocks large enough to be sliced."""

from __future__ import annotations

import random

import pytest
from test_dedup_engines import generated

from kgctl.dedup.cluster import MAX_BLOCK, Mention, Thresholds, _blocks, cluster
from kgctl.dedup.incremental import State


def ordered(result):
    key = lambda p: (p.a, p.b, p.method, p.evidence)  # noqa: E731
    return (result.clusters, *(sorted(getattr(result, k), key=key)
                               for k in ("decisions", "grey", "refused")))


def incremental(mentions, batches, thresholds, path=None, **reviews):
    with State(path, thresholds, **reviews) as state:
        redone = [state.add(mentions[i::batches]) for i in range(batches)]
        return state.result(), redone


@pytest.mark.parametrize("seed,scope", [(4, "global"), (5, "paper")])
def test_batches_give_the_clusters_of_one_run(seed, scope, tmp_path):
    mentions = generated(seed, n=600)
    rng = random.Random(seed)
    pairs = [(rng.choice(mentions).iri, rng.choice(mentions).iri) for _ in range(30)]
    t = Thresholds(merge_keys=("ref",), conflict_keys=("formula", "ref"), name_scope=scope)
    reviews = {"accept": pairs[:15], "reject": pairs[15:]}
    full = cluster(mentions, t, **reviews)
    assert full.refused and full.decisions and (full.grey or scope == "paper")
    result, _ = incremental(mentions, 4, t, path=tmp_path / "state.duckdb", **reviews)
    assert ordered(result) == ordered(full)
    with pytest.raises(ValueError, match="other thresholds or reviews"):
        State(tmp_path / "state.duckdb", t, accept=pairs[:14], reject=pairs[15:])


def test_a_new_mention_reclusters_only_what_it_touches():
    rng = random.Random(7)
    letters = "abcdefghij"
    # one block of more than MAX_BLOCK names: it is sliced, and new names re-score one slice
    names = sorted({"kappa" + "".join(rng.choice(letters) for _ in range(9))
                    for _ in range(MAX_BLOCK + 300)})
    names += [n[:-1] + "z" for n in names[:200]]  # near-twins: fuzzy merges
    mentions = [Mention(iri=f"https://example.org/p{i % 50}/m{i}", paper=f"p{i % 50}",
                        labels=(n,), keys=(("ref", f"R{i % 97}"),) if i % 5 == 0 else ())
                for i, n in enumerate(names)]
    assert max(len(b) for b in _blocks(sorted(names))) < len(names)  # sliced
    t = Thresholds(merge=90, review=80)
    new = mentions[::97]
    old = [m for i, m in enumerate(mentions) if i % 97]
    with State(None, t) as state:
        state.add(old[:800])  # below MAX_BLOCK, then above it (new cuts), then a few more
        state.add(old[800:])
        redone = state.add(new)
        result = state.result()
    assert ordered(result) == ordered(cluster(mentions, t))
    assert len(new) < redone < len(mentions) / 2
