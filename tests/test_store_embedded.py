"""EmbeddedStore through its public interface: writes, reads, provenance, atomicity."""

from __future__ import annotations

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat, Triple
from store_helpers import EX, record, step_triples

from kgctl.errors import InputError, StoreError
from kgctl.store import EmbeddedStore, canonical_nquads
from kgctl.store.iris import graph_iri

HAS_ORDER = f"SELECT ?s WHERE {{ ?s <{EX}hasOrder> ?o }}"


@pytest.fixture
def store():
    return EmbeddedStore()


def test_write_then_read_back_in_the_paper_graph_only(store):
    stored = store.write("p1", insert=step_triples("p1", 1), record=record("p1", 1))
    store.write("p2", insert=step_triples("p2", 1))
    assert stored.seq == 1 and "hasOrder" in stored.inserted
    assert store.papers() == ["p1", "p2"]
    assert set(store.triples("p1")) == set(step_triples("p1", 1))
    rows = list(store.query(HAS_ORDER, paper_id="p2"))
    assert [r["s"].value for r in rows] == ["https://w3id.org/kgctl/paper/p2/Step/step-1"]
    union = list(store.query(HAS_ORDER, union=True))
    assert len(union) == 2


def test_bindings_are_terms_not_text(store):
    store.write("p1", insert=step_triples("p1", 1))
    evil = Literal('value 1.0 "q" } # é')
    rows = list(store.query("SELECT ?s WHERE { ?s ?p ?v }", bindings={"v": evil},
                            paper_id="p1"))
    assert len(rows) == 1


def test_delete_and_insert_in_one_call(store):
    store.write("p1", insert=step_triples("p1", 1), record=record("p1", 1))
    old = step_triples("p1", 1)[0]
    new = Triple(old.subject, old.predicate, Literal("9"))
    stored = store.write("p1", delete=[old], insert=[new], record=record("p1", 2))
    assert stored.seq == 2 and stored.deleted == f"{old} .\n"
    assert new in set(store.triples("p1")) and old not in set(store.triples("p1"))


def test_trace_returns_records_in_order_with_delta_and_prov(store):
    for n in range(1, 4):
        store.write("p1", insert=step_triples("p1", n), record=record("p1", n, evidence=True))
    trace = store.trace("p1")
    assert [r.seq for r in trace] == [1, 2, 3]
    assert trace[1].evidence.quote == "Step 2 was done." and trace[1].arguments["note"] == "x\ny"
    assert trace[2].inserted.count("\n") == 3
    ask = store.query(
        "ASK { GRAPH ?g { ?a a <https://w3id.org/kgctl/ns#Call> ; "
        "<https://w3id.org/kgctl/ns#generated> ?iri ; "
        "<https://w3id.org/kgctl/ns#quote> ?q } }",
        bindings={"iri": NamedNode("https://w3id.org/kgctl/paper/p1/Step/step-2"),
                  "q": Literal("Step 2 was done.")})
    assert bool(ask)


def test_seq_must_follow(store):
    store.write("p1", insert=step_triples("p1", 1), record=record("p1", 1, seq=1))
    before = canonical_nquads(store, "p1", provenance=True)
    with pytest.raises(StoreError, match="does not follow"):
        store.write("p1", insert=step_triples("p1", 2), record=record("p1", 2, seq=5))
    assert canonical_nquads(store, "p1", provenance=True) == before


@pytest.mark.parametrize("bad", [
    lambda: {"insert": [Triple(BlankNode(), NamedNode(EX + "p"), Literal("x"))]},
    lambda: {"insert": [*step_triples("p1", 7), "not a triple"]},
    lambda: {"insert": step_triples("p1", 7), "record": record("p2", 7)},
    lambda: {"insert": step_triples("p1", 7),
             "record": record("p1", 7).model_copy(update={"time": "yesterday"})},
    lambda: {"insert": step_triples("p1", 7),
             "record": record("p1", 7).model_copy(update={"iris": ("not an iri",)})},
])
def test_refused_write_leaves_graph_byte_identical(store, bad):
    store.write("p1", insert=step_triples("p1", 1), record=record("p1", 1))
    before = canonical_nquads(store, "p1", provenance=True)
    with pytest.raises(InputError):
        store.write("p1", **bad())
    assert canonical_nquads(store, "p1", provenance=True) == before


def test_failing_generator_writes_nothing(store):
    store.write("p1", insert=step_triples("p1", 1))
    before = canonical_nquads(store, "p1")

    def half_then_fail():
        yield from step_triples("p1", 2)
        raise RuntimeError("validation failed part-way")

    with pytest.raises(RuntimeError):
        store.write("p1", insert=half_then_fail(), record=record("p1", 2))
    assert canonical_nquads(store, "p1") == before
    assert store.trace("p1") == []


def test_failing_update_is_rolled_back(store):
    store.write("p1", insert=step_triples("p1", 1))
    before = canonical_nquads(store, "p1")
    g = graph_iri("p1")
    with pytest.raises(StoreError):
        store.update(f"INSERT DATA {{ GRAPH {g} {{ <http://x> <http://y> 1 }} }} ; "
                     f"CREATE GRAPH {g}")
    assert canonical_nquads(store, "p1") == before


def test_drop_export_import_round_trip(store):
    for n in (1, 2):
        store.write("p1", insert=step_triples("p1", n), record=record("p1", n))
    store.write("p2", insert=step_triples("p2", 1), record=record("p2", 1))
    data = store.export(paper_id="p1", format=RdfFormat.TRIG)
    full = canonical_nquads(store, "p1", provenance=True)
    store.drop("p1")
    assert store.papers() == ["p2"]
    with pytest.raises(StoreError, match="unknown paper"):
        store.drop("p1")
    assert store.import_data(data, format=RdfFormat.TRIG) == ["p1"]
    assert canonical_nquads(store, "p1", provenance=True) == full
    assert [r.seq for r in store.trace("p1")] == [1, 2]
    # next write continues the imported trace
    assert store.write("p1", insert=step_triples("p1", 3), record=record("p1", 3)).seq == 3
    turtle = store.export(paper_id="p2", format=RdfFormat.TURTLE)
    assert b"hasOrder" in turtle and b"Activity" not in turtle


def test_corrupt_trig_imports_nothing(store):
    store.write("p1", insert=step_triples("p1", 1))
    before = store.export(format=RdfFormat.N_QUADS)
    bad = (b"<http://a> { <http://s> <http://p> <http://o> . }\n"
           b"<https://w3id.org/kgctl/paper/p9> { <http://s> <http://p> \"unterminated }\n")
    with pytest.raises(InputError, match="corrupt TriG"):
        store.import_data(bad)
    assert store.export(format=RdfFormat.N_QUADS) == before
    assert store.papers() == ["p1"]


def test_invalid_query_and_paper_id_are_input_errors(store):
    with pytest.raises(InputError, match="invalid SPARQL"):
        store.query("SELECT WHERE {")
    with pytest.raises(InputError, match="not a paper id"):
        store.write("a/b", insert=step_triples("p1", 1))


def test_a_large_import_is_whole_or_nothing(tmp_path):
    """An import of BULK_QUADS quads or more goes through the bulk loader: all of it, with
    quads already there, or nothing (a blank node refuses the whole import)."""
    from pyoxigraph import BlankNode, NamedNode, Quad

    from kgctl.store.embedded import BULK_QUADS
    from kgctl.store.iris import graph_iri

    disk = EmbeddedStore(tmp_path / "store")
    disk.write("p1", insert=step_triples("p1", 1))
    there = list(disk.quads())
    g = graph_iri("p2")
    new = [Quad(NamedNode(f"https://ex.org/s{i}"), NamedNode("https://ex.org/p"),
                NamedNode(f"https://ex.org/o{i}"), g) for i in range(BULK_QUADS)]
    with pytest.raises(InputError, match="blank nodes"):
        disk.import_quads([*new, Quad(BlankNode(), NamedNode("https://ex.org/p"),
                                      NamedNode("https://ex.org/o"), g)])
    assert list(disk.quads()) == there
    assert disk.import_quads(new + there) == ["p1", "p2"]
    disk.close()
    disk = EmbeddedStore(tmp_path / "store")
    try:
        assert len(list(disk.quads())) == len(there) + BULK_QUADS
        assert disk.papers() == ["p1", "p2"]
    finally:
        disk.close()
