"""Per-paper lookups that do not list every paper (`has_paper`), and an instantiation engine
that keeps only recent papers' indexes and reloads an evicted one whole."""

from __future__ import annotations

from pathlib import Path

from pyoxigraph import Literal, NamedNode, Triple

from kgctl.instantiation import engine as engine_module
from kgctl.instantiation.engine import Instantiator
from kgctl.ontology import load_ir
from kgctl.store import EmbeddedStore

SOSA = Path(__file__).parent / "ontologies" / "sosa" / "sosa.ttl"
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")


def test_has_paper_sees_graph_and_provenance_only_of_that_paper() -> None:
    store = EmbeddedStore()
    store.write("p1", insert=[Triple(NamedNode("urn:x"), LABEL, Literal("x"))])
    assert store.has_paper("p1") and not store.has_paper("p2") and not store.has_paper("p")
    store.drop("p1")
    assert not store.has_paper("p1")


def test_an_evicted_paper_index_is_reloaded_whole(monkeypatch) -> None:
    monkeypatch.setattr(engine_module, "MAX_INDEXES", 1)
    store = EmbeddedStore()
    engine = Instantiator(load_ir([SOSA], profile_paths=[]), store)
    assert any(t.name == "create_entity" for t in engine.surface.tools)  # SOSA is bounded
    call = ("create_entity", {"type": "sosa:Sensor", "label": "Thermometer 1"})
    first = engine.call(call[0], "pa", call[1])
    engine.call(call[0], "pb", call[1])  # evicts pa's index
    assert list(engine._indexes) == ["pb"]
    reloaded = engine.index("pa")
    assert reloaded.labels[first.iris[0]] == {"Thermometer 1"}
    assert list(engine._indexes) == ["pa"]


def test_replay_flushes_the_store_as_it_writes(tmp_path, monkeypatch) -> None:
    """RocksDB's write buffers grow with every paper unless flushed: a corpus replay flushes
    the store every FLUSH_QUADS quads it writes, and at the end."""
    from evaluation_helpers import replay_into

    from kgctl.agent import replay

    class Counting(EmbeddedStore):
        flushes = 0

        def flush(self) -> None:
            Counting.flushes += 1
            super().flush()

    monkeypatch.setattr(replay, "FLUSH_QUADS", 1)
    store = Counting(tmp_path / "store")
    papers = ["10.1002_anie.201811027", "10.1002_chem.201604264"]
    reports = replay_into(store, papers)
    assert [r.paper_id for r in reports] == papers and Counting.flushes == 3
    assert store.papers() == papers
