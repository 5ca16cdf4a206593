"""Construction tools: schema checks, dry-run gating, unit conversion, paths, undo."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from retrieval_helpers import mop30_engine, reference

from kgctl.retrieval.feedback import Rejected

S = "session-a"


@pytest.fixture(scope="module")
def engine():
    return mop30_engine()


PREFIXES = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
PREFIX om-2: <http://www.ontology-of-units-of-measure.org/resource/om-2/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
IN_KELVIN = """SELECT DISTINCT ?l WHERE {
  ?s rdfs:label ?l ; ontosyn:hasSynthesisStep/ontosyn:hasTargetTemperature ?t .
  ?t om-2:hasNumericalValue ?v ; om-2:hasUnit ?u .
  VALUES (?u ?o) { (om-2:degreeCelsius 273.15) (om-2:kelvin 0.0) }
  FILTER(?v + ?o >= %s && ?v + ?o <= %s) }"""


def labels(engine, qid, column="syn_label"):
    answer = engine.execute_query(S, qid, limit=1000)
    i = answer.columns.index(column)
    return sorted({(row[i],) for row in answer.rows}, key=str)


def test_quantity_filter_converts_units(engine):
    qid = engine.new_query(S, "step").query_id
    view = engine.filter_by_quantity(S, qid, "step", "ontosyn:hasTargetTemperature", "°C",
                                     minimum=100)
    ox.Store().query(view.sparql)  # strict SPARQL 1.1, parses back
    engine.add_triple(S, qid, "synthesis", "rdfs:label", object="syn_label")
    engine.select(S, qid, ["syn_label"])
    expected = reference(PREFIXES + IN_KELVIN % (373.15, 1e9))
    assert len(expected) > 10 and labels(engine, qid) == expected


def test_kelvin_range_matches_celsius_values(engine):
    qid = engine.new_query(S, "step").query_id
    engine.filter_by_quantity(S, qid, "step", "ontosyn:hasTargetTemperature", "K", minimum=330,
                              maximum=360)
    engine.add_triple(S, qid, "synthesis", "rdfs:label", object="syn_label")
    units = reference(PREFIXES + "SELECT DISTINCT ?u WHERE { ?x ontosyn:hasTargetTemperature/"
                      "om-2:hasUnit ?u }")
    assert {"degreeCelsius", "kelvin"} <= {u.rsplit("/", 1)[-1] for (u,) in units}
    expected = reference(PREFIXES + IN_KELVIN % (330, 360))
    assert expected and labels(engine, qid) == expected


BAD_STEPS = [
    ("unknown_property", lambda e, q: e.add_triple(S, q, "synthesis", "ontosyn:hasColour")),
    ("domain_mismatch", lambda e, q: e.add_triple(S, q, "synthesis",
                                                  "ontosyn:hasTargetTemperature")),
    ("no_path", lambda e, q: e.add_path_constraint(S, q, "synthesis", "ontosyn:ExecutionPoint")),
    ("empty_result", lambda e, q: e.filter_by_value(S, q, "label", "no such synthesis")),
    ("empty_filter", lambda e, q: e.filter_by_value(S, q, "label", "  ")),
    ("malformed_regex", lambda e, q: e.filter_by_value(S, q, "label", "([a-", match="regex")),
    ("empty_result", lambda e, q: e.filter_by_value(
        S, q, "label", '"} . ?s ?p ?o } DELETE WHERE { ?s ?p ?o } #')),
    ("invalid_name", lambda e, q: e.add_triple(S, q, "synthesis", "rdfs:label",
                                               object="x } DROP ALL")),
    ("unknown_variable", lambda e, q: e.group_by(S, q, ["nope"])),
    ("unknown_unit", lambda e, q: e.filter_by_quantity(S, q, "synthesis", "ontosyn:hasYield",
                                                       "hour", minimum=1)),
    ("not_a_quantity", lambda e, q: e.filter_by_quantity(S, q, "synthesis",
                                                         "ontosyn:hasChemicalInput", "%",
                                                         minimum=1)),
    ("not_numeric", lambda e, q: e.aggregate(S, q, "AVG", variable="label")),
    ("type_mismatch", lambda e, q: e.filter_by_entity(
        S, q, "synthesis", [e.find_entities("KBr").candidates[0].value])),
]


@pytest.mark.parametrize(("code", "step"), BAD_STEPS, ids=[c for c, _ in BAD_STEPS])
def test_bad_steps_are_rejected_and_change_nothing(engine, code, step):
    qid = engine.new_query(S, "synthesis").query_id
    before = engine.show_query(S, qid).sparql
    rows = engine.execute_query(S, qid, limit=1000).rows
    with pytest.raises(Rejected) as caught:
        step(engine, qid)
    fb = caught.value.feedback
    assert fb.code == code and fb.status == "rejected" and fb.message
    assert engine.show_query(S, qid).sparql == before
    assert engine.execute_query(S, qid, limit=1000).rows == rows
    with pytest.raises(Rejected, match="nothing_to_undo"):
        engine.undo(S, qid)


def test_all_bad_step_cases_ran():
    assert len(BAD_STEPS) == 13


def test_injection_text_is_a_literal_not_syntax(engine):
    store_size = len(list(engine.store.query("SELECT * WHERE { ?s ?p ?o }", union=True)))
    qid = engine.new_query(S, "chemical_input").query_id
    with pytest.raises(Rejected):
        engine.filter_by_value(S, qid, "name", '" ) } ; DROP ALL ; #', match="contains")
    assert len(list(engine.store.query("SELECT * WHERE { ?s ?p ?o }", union=True))) == store_size


def test_ambiguous_path_returns_ranked_options_then_option_commits(engine):
    qid = engine.new_query(S, "synthesis").query_id
    with pytest.raises(Rejected) as caught:
        engine.add_path_constraint(S, qid, "synthesis", "om-2:Temperature")
    fb = caught.value.feedback
    assert fb.code == "ambiguous_path" and len(fb.options) >= 2
    assert [o.rank for o in fb.options] == list(range(len(fb.options)))
    assert "hasTargetTemperature" in fb.options[0].value  # most instances first
    view = engine.add_path_constraint(S, qid, "synthesis", "om-2:Temperature", option=0)
    assert "ontosyn:hasTargetTemperature" in view.sparql and "temperature" in view.variables
    assert engine.undo(S, qid).sparql == engine.new_query(S, "synthesis").sparql


def test_containers_are_per_session(engine):
    qid = engine.new_query("alice", "synthesis").query_id
    with pytest.raises(Rejected, match="unknown_query"):
        engine.show_query("bob", qid)


def test_grouped_query_projection_samples_ungrouped_variables(engine):
    qid = engine.new_query(S, "chemical_input").query_id
    engine.group_by(S, qid, ["synthesis"])
    engine.select(S, qid, ["synthesis", "name"])
    view = engine.aggregate(S, qid, "COUNT", variable="chemical", distinct=True)
    assert "(SAMPLE(?name) AS ?name_sample)" in view.sparql
    assert view.columns == ("synthesis", "name_sample", "count_chemical")
    answer = engine.execute_query(S, qid, limit=1000)
    expected = reference(PREFIXES + "SELECT ?s (COUNT(DISTINCT ?c) AS ?n) WHERE { "
                         "?s ontosyn:hasChemicalInput ?c . ?c a ontosyn:ChemicalInput } "
                         "GROUP BY ?s")
    assert sorted(((r[0], r[2]) for r in answer.rows), key=str) == expected


def test_find_entities_ranks_exact_label_first(engine):
    found = engine.find_entities("n,n-dimethylformamid", class_name="ontosyn:ChemicalInput")
    assert found.candidates[0].label.lower() == "n,n-dimethylformamide"
    assert all("ontosyn:ChemicalInput" in c.classes for c in found.candidates)
    described = engine.describe_entity(found.candidates[0].value)
    assert "ontosyn:ChemicalInput" in described.classes


def test_describe_class_counts_instances(engine):
    desc = engine.describe_class("ontosyn:HeatChill")
    [(steps,)] = reference(PREFIXES + "SELECT (COUNT(*) AS ?n) WHERE { ?x a ontosyn:HeatChill }")
    [(heated,)] = reference(PREFIXES + "SELECT (COUNT(*) AS ?n) WHERE { "
                            "?x a ontosyn:HeatChill ; ontosyn:hasTargetTemperature ?t }")
    assert desc.instances == int(steps) > int(heated) > 0
    by_name = {(p.curie, p.direction): p for p in desc.properties}
    assert by_name[("ontosyn:hasTargetTemperature", "out")].instances == int(heated)
    assert "om-2:kelvin" in by_name[("ontosyn:hasTargetTemperature", "out")].quantity_units


def test_provenance_records_are_not_part_of_the_schema(engine):
    """The replayed store's provenance graphs type 1,700 call records: bookkeeping, never a class
    to query, a template or a path."""
    from kgctl.store.provenance import KG

    calls = engine.store.query(f"ASK {{ GRAPH ?g {{ ?c a <{KG}Call> }} }}")
    assert bool(calls)
    assert not any(c.iri.startswith(KG) for c in engine.list_classes().classes)
    assert not any(KG in e.subject + e.property + e.object for e in engine.schema.mined.edges)
