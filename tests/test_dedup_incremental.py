"""Clustering mentions batch by batch through the kept state gives what clustering them all at
once gives: clusters, merges, refusals and review pairs, with reviews, conflicts, near-twins and
blocks large enough to be sliced; `kgctl dedup --state` writes what a full run writes."""

from __future__ import annotations

import random
from itertools import product

import pytest
from test_dedup_engines import generated
from test_dedup_job import add_chemical, links

from kgctl.dedup.cluster import MAX_BLOCK, Mention, Thresholds, _blocks, cluster, starts_slice
from kgctl.dedup.incremental import State
from kgctl.dedup.job import DEDUP_PROVENANCE, run
from kgctl.dedup.spec import pack_specs
from kgctl.store.embedded import EmbeddedStore


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


def provenance(s):
    rows = s.query("SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
                       bindings={"g": DEDUP_PROVENANCE})
    return sorted(f"{r['s']} {r['p']} {r['o']}" for r in rows)


def test_the_job_with_a_kept_state_writes_what_a_full_run_writes(tmp_path):
    store = EmbeddedStore()
    add_chemical(store, "p1", "dmf", "DMF", alt="N,N-dimethylformamide", formula="C3H7NO")
    add_chemical(store, "p2", "dmf", "N, N-Dimethylformamide", formula="HCON(CH3)2")
    add_chemical(store, "p2", "cu", "copper nitrate", formula="Cu(NO3)2·6H2O")
    add_chemical(store, "p3", "cu", "copper nitrate")
    specs = pack_specs(None)
    state = tmp_path / "state"
    run(store, specs, state=state)
    assert {p.stem for p in state.iterdir()} >= {"chemical"}
    add_chemical(store, "p4", "dmf", "N,N-dimethylformamide", formula="C3H7NO")
    add_chemical(store, "p4", "cu", "Cu(NO3)2·3H2O", formula="Cu(NO3)2·3H2O")
    kept = run(store, specs, state=state)  # harvests p4 only
    kept_links, kept_provenance = links(store), provenance(store)
    full = run(store, specs)
    assert kept == full
    assert (kept_links, kept_provenance) == (links(store), provenance(store))
    store.drop("p2")  # a paper gone: the state is built again
    assert run(store, specs, state=state) == run(store, specs)


@pytest.mark.parametrize("there,here", [("2", "3"), ("3", "2")])  # the untouched name first, last
@pytest.mark.parametrize("key,reject,grey", [("A", False, 2), ("B", False, 1), ("A", True, 1)])
def test_a_review_pair_to_an_untouched_part_is_decided_from_its_kept_probe(there, here, key,
                                                                           reject, grey):
    """An untouched part U (a name without keys, merged with a spelling that carries f=A after
    the review pair's turn) and a touched part T (another locant, gaining a mention with
    f=key): each pair U~T is decided from U's conflict keys at its turn, as one run does."""
    name = "1,{}-dichlorobenzenecarboxylic acid methyl ester".format
    spelt = "1,{}-dichlorobenzencarboxylic acid methyl est".format

    def m(i, label, keys=()):
        return Mention(iri=f"p{i}#c", paper=f"p{i}", labels=(label,), keys=keys)

    old = [m(1, name(there)), m(2, spelt(there), (("f", "A"),)), m(3, name(here)),
           m(5, "zinc oxide")]
    new = [m(4, name(here), (("f", key),))]
    t = Thresholds(conflict_keys=("f",))
    reviews = {"reject": [("p2#c", "p3#c")] if reject else []}
    full = cluster(old + new, t, **reviews)
    assert len(full.grey) == grey and len(full.clusters) == 3
    with State(None, t, **reviews) as state:
        state.add(old)
        redone = state.add(new)  # T's two profiles, not U's
        assert ordered(state.result()) == ordered(full)
    assert redone == 2


def test_a_mention_of_a_kept_profile_reclusters_its_part_only_if_it_reorders_it():
    t = Thresholds(conflict_keys=("f",))
    ms = [Mention(iri=f"p{i}#c", paper=f"p{i}", labels=(label,), keys=(("f", f),))
          for i, label, f in [(2, "copper nitrate", "A"), (3, "copper nitrate", "B"),
                              (5, "zinc oxide", "C"), (4, "copper nitrate", "A"),
                              (1, "Copper  nitrate", "B")]]
    with State(None, t) as state:
        redone = [state.add(batch) for batch in (ms[:3], ms[3:4], ms[4:])]
        assert ordered(state.result()) == ordered(cluster(ms, t))
    # p4 joins p2's profile (a larger IRI: nothing to redo); p1 becomes the first IRI of p3's
    # profile, which now comes first: the refused merge names it, its part is clustered again
    assert redone == [3, 0, 2]


def test_a_review_pair_cut_apart_by_a_new_slice_goes_without_reclustering_its_parts():
    rng = random.Random(3)
    bulk = sorted({"1,1-kappa" + "".join(rng.choice("abcdefghij") for _ in range(9)) + "oxide"
                   for _ in range(MAX_BLOCK + 100)})  # both blocks of every name are sliced
    twins = ["1,2-kappammmmmmmmmoxide", "1,3-kappammmmmmmmmoxide"]  # a review pair
    cut = next(n for n in ("1,2-kappa" + "".join(p) + "oxide" for p in product("nopqrst", repeat=5))
               if starts_slice(n))  # a new slice between the twins: their pair is gone

    def m(i, name):
        return Mention(iri=f"p{i}#c", paper=f"p{i}", labels=(name,))

    old = [m(i, n) for i, n in enumerate(bulk + twins)]
    new = [m(len(old), cut)]
    t = Thresholds()
    assert any("mmm" in p.evidence for p in cluster(old, t).grey)
    full = cluster(old + new, t)
    assert not any("mmm" in p.evidence for p in full.grey)
    with State(None, t) as state:
        state.add(old)
        assert state.add(new) == 1
        assert ordered(state.result()) == ordered(full)
