"""The out-of-core engine (DuckDB) forms exactly the clusters, merges, review pairs and refusals of
the in-memory engine: on generated mentions full of conflicts, near-twins and review verdicts,
on the MOP-30 graphs, and through `kgctl dedup --engine duckdb`."""

from __future__ import annotations

import random
from itertools import groupby
from operator import itemgetter

import pytest
from click.testing import CliRunner
from evaluation_helpers import replayed_store, traces_by_paper
from test_dedup_job import add_chemical, links

from kgctl.cli import cli
from kgctl.dedup.cluster import Mention, Thresholds, cluster
from kgctl.dedup.job import DEDUP_GRAPH, DEDUP_PROVENANCE, harvest
from kgctl.dedup.outofcore import OutOfCore
from kgctl.dedup.spec import pack_specs
from kgctl.store.embedded import EmbeddedStore

WORDS = ("alpha", "beta", "gamma", "delta", "sigma", "omega")


def generated(seed: int, n: int = 1500) -> list[Mention]:
    """Names from few words (exact, spaced, misspelt, other locants), fragments, conflicting
    and shared keys, mentions without any name."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = rng.randrange(120)
        body = "".join(WORDS[(c // 12 * k) % 6] for k in (1, 2, 5))  # twelve isomers a body
        name = f"{c % 4 + 1},{c % 3 + 2}-{body}"
        label = rng.choice((name, name.upper(), name.replace(",", ", "), name[:-1], "[Cu2]",
                            f"{name} hydrate"))
        keys = [("formula", f"F{c % 40}")] if rng.random() < 0.6 else []
        if rng.random() < 0.2:
            keys.append(("ref", f"R{c % 50}"))
        labels = (label,) if rng.random() < 0.95 else ()
        out.append(Mention(iri=f"https://example.org/p{i % 37}/m{rng.randrange(10**6)}-{i}",
                           paper=f"p{i % 37}", labels=labels, keys=tuple(keys)))
    return out


def both(mentions, thresholds, **reviews):
    with OutOfCore(memory_limit="200MB", threads=1) as engine:
        engine.add(mentions)
        engine.run(thresholds, **reviews)
        result = engine.result()
        links = [[iri for _, iri in rows] for _, rows in groupby(engine.links(), itemgetter(0))]
        assert links == [c.members for c in result.clusters]  # the streamed read-out agrees
        return cluster(mentions, thresholds, **reviews), result


@pytest.mark.parametrize("seed,scope", [(1, "global"), (2, "global"), (3, "paper")])
def test_generated_mentions_give_identical_results(seed, scope):
    mentions = generated(seed)
    rng = random.Random(seed)
    pairs = [(rng.choice(mentions).iri, rng.choice(mentions).iri) for _ in range(40)]
    thresholds = Thresholds(merge_keys=("ref",), conflict_keys=("formula", "ref"),
                            name_scope=scope)
    memory, ooc = both(mentions, thresholds, accept=pairs[:20], reject=pairs[20:])
    assert memory.refused and memory.decisions and (memory.grey or scope == "paper")
    assert ooc.clusters == memory.clusters
    assert (ooc.decisions, ooc.grey, ooc.refused) == (memory.decisions, memory.grey,
                                                      memory.refused)


def test_mop30_graphs_give_identical_results():
    store = replayed_store(sorted(traces_by_paper())[:10])
    checked = 0
    for spec in pack_specs(None):
        mentions = harvest(store, spec)
        memory, ooc = both(mentions, spec.thresholds())
        assert ooc == memory, spec.name
        checked += len(memory.decisions) + len(memory.refused) + len(memory.grey)
    assert checked > 50


def dedup_quads(store) -> list[str]:
    return sorted(f"{r['g']} {r['s']} {r['p']} {r['o']}" for g in (DEDUP_GRAPH, DEDUP_PROVENANCE)
                  for r in store.query("SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
                                       bindings={"g": g}))


def dedup_by_cli(tmp_path, name: str, options: list[str]) -> tuple[str, tuple]:
    """`kgctl dedup <options>` on a small store (two spellings of DMF, two hydrates of copper
    nitrate, which must stay apart): its output and what it wrote (links, dedup graphs, review
    file)."""
    path = tmp_path / name
    store = EmbeddedStore(path)
    dmf = add_chemical(store, "p1", "dmf", "DMF", alt="N,N-dimethylformamide", formula="C3H7NO")
    dmf2 = add_chemical(store, "p2", "dmf", "N, N-Dimethylformamide", formula="C3H7NO")
    add_chemical(store, "p3", "x", "dimethylformamid", formula="C3H7NO")
    cu3 = add_chemical(store, "p3", "cu", "copper nitrate", formula="Cu(NO3)2·3H2O")
    cu6 = add_chemical(store, "p4", "cu", "copper nitrate", formula="Cu(NO3)2·6H2O")
    store.close()
    out = CliRunner().invoke(cli, ["dedup", "--store", str(path), *options,
                                   "--review", str(tmp_path / f"{name}.csv")])
    assert out.exit_code == 0, out.output
    store = EmbeddedStore(path)
    written = (links(store), dedup_quads(store), (tmp_path / f"{name}.csv").read_text())
    store.close()
    link = written[0]
    assert link[dmf] == link[dmf2] and link[cu3] != link[cu6]
    return out.output, written


def test_cli_duckdb_engine_writes_the_same_graphs(tmp_path):
    _, memory = dedup_by_cli(tmp_path, "memory", ["--engine", "memory"])
    output, duckdb = dedup_by_cli(tmp_path, "duckdb", ["--engine", "duckdb"])
    assert "1 refused" in output
    assert duckdb == memory


def test_cli_rejects_a_bad_memory_limit(tmp_path):
    out = CliRunner().invoke(cli, ["dedup", "--store", str(tmp_path / "s"), "--engine", "duckdb",
                                   "--memory-limit", "lots"])
    assert out.exit_code == 2 and "not a memory size: 'lots'" in out.output
    assert not (tmp_path / "s").exists()
