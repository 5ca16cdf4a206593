"""`kgctl store compact`: the same quads in a fresh database, nothing lost when it cannot run."""

from __future__ import annotations

import json

from click.testing import CliRunner
from store_helpers import record, step_triples

from kgctl.cli import cli
from kgctl.store import EmbeddedStore, canonical_nquads

CALLS = 60


def build(path) -> dict[str, str]:
    """A store written one call at a time, some calls deleting; its content per paper."""
    store = EmbeddedStore(path)
    for n in range(1, CALLS + 1):
        for paper in ("p1", "p2"):
            delete = step_triples(paper, n - 1)[:1] if n % 4 == 0 else []
            store.write(paper, insert=step_triples(paper, n), delete=delete,
                        record=record(paper, n))
    content = {p: canonical_nquads(store, p, provenance=True) for p in store.papers()}
    store.close()
    return content


def compact(path):
    return CliRunner().invoke(cli, ["store", "compact", "--store", str(path), "--json"])


def test_compaction_keeps_every_quad_and_shrinks_the_store(tmp_path):
    before = build(tmp_path / "store")
    result = compact(tmp_path / "store")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert done["quads"] > CALLS * 2 and done["bytes_after"] < done["bytes_before"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # no copy left beside it
    store = EmbeddedStore(tmp_path / "store")
    assert {p: canonical_nquads(store, p, provenance=True) for p in store.papers()} == before
    later = step_triples("p1", CALLS + 1)
    store.write("p1", insert=later, record=record("p1", CALLS + 1))  # the trace goes on
    assert set(later) <= set(store.triples("p1"))


def test_a_store_in_use_is_refused_and_left_as_it_was(tmp_path):
    before = build(tmp_path / "store")
    holder = EmbeddedStore(tmp_path / "store")
    result = compact(tmp_path / "store")
    assert result.exit_code == 2 and result.output.startswith("error:")
    assert "another process holds the store" in result.output
    assert {p: canonical_nquads(holder, p, provenance=True) for p in holder.papers()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_an_interrupted_swap_is_finished_by_the_next_compaction(tmp_path):
    before = build(tmp_path / "store")
    (tmp_path / "store").rename(tmp_path / "store.old")  # stopped between the two renames
    result = compact(tmp_path / "store")
    assert result.exit_code == 0, result.output
    store = EmbeddedStore(tmp_path / "store")
    assert {p: canonical_nquads(store, p, provenance=True) for p in store.papers()} == before


def test_no_store_is_a_usage_error(tmp_path):
    result = compact(tmp_path / "nothing")
    assert result.exit_code == 2 and "no store at" in result.output
    assert not (tmp_path / "nothing").exists()
