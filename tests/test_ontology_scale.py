"""Ontologies at CIDOC-CRM scale: a surface bounded by design (create_entity, checked against
the T-Box), existentials soft at creation unless a profile makes them hard, and feedback an
agent can act on as given. Through a real MCP client session (corpus_helpers.run_session)."""

from __future__ import annotations

import json
from pathlib import Path

from corpus_helpers import CORPUS, run_session

from kgctl.compiler import compile_tools
from kgctl.compiler.budget import SURFACE_BUDGET, plan_budget
from kgctl.compiler.plan import compile_plan
from kgctl.ontology import load_ir

CYCLIC = """@prefix ex: <https://example.org/c#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Work a owl:Class ; rdfs:subClassOf [ a owl:Restriction ; owl:onProperty ex:hasPart ;
    owl:someValuesFrom ex:Work ] , [ a owl:Restriction ; owl:onProperty ex:done ;
    owl:someValuesFrom xsd:boolean ] .
ex:hasPart a owl:ObjectProperty ; rdfs:domain ex:Work ; rdfs:range ex:Work .
ex:done a owl:DatatypeProperty .
"""


def _result(text: str) -> dict:
    return json.loads(text)


def test_cyclic_existential_is_soft_and_recorded_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "cyclic.ttl"
    path.write_text(CYCLIC, encoding="utf-8")
    seen = run_session(load_ir([path], profile_paths=[]), [
        ("create_work", {"label": "w1"}, None, None),
        ("create_work", {"label": "w2", "part": "w1", "done": True}, None, None),
        ("create_work", {"label": "w3", "done": "yes"}, ("datatype",), None),
        ("find_missing", {}, None, None),
    ])
    first, second, third, listed = (_result(text) for _, _, text in seen)
    assert {(r["label"], r["field"]) for r in listed["data"]} == {("w1", "part"), ("w1", "done")}
    assert not seen[0][1] and not seen[1][1] and seen[2][1]
    assert {m["field"] for m in first["missing"]} == {"part", "done"}  # argument paths
    assert all(m["code"] == "required_missing" for m in first["missing"])
    assert second["missing"] == []
    assert third["field"] == "done[0]" and "xsd:boolean" in third["message"]
    hard = tmp_path / "hard.profile.yaml"
    hard.write_text("existentials: hard\n", encoding="utf-8")
    refused = run_session(load_ir([path], profile_paths=[hard]), [
        ("create_work", {"label": "w1"}, None, None)])
    assert refused[0][1] and _result(refused[0][2])["code"] == "required_missing"


def test_doremus_gets_a_bounded_surface_that_creates_cyclic_classes() -> None:
    ir = load_ir([CORPUS / "doremus/doremus.ttl"], profile_paths=[],
                 ignore_imports=["http://www.w3.org/2004/02/skos/core"])
    surface = compile_tools(ir)
    report = plan_budget(compile_plan(ir, surface=surface), surface)
    assert surface.groups and report.surface_tokens < SURFACE_BUDGET / 10
    assert not report.over_budget()
    assert {"crm.rdf", "frbroo.owl"} <= set(ir.ontologies)  # through the catalog, by IRI
    seen = run_session(ir, [
        ("create_entity", {"type": "ecrm:E89_Propositional_Object", "label": "p1"}, None, None),
        ("create_entity", {"type": "E21 Person", "label": "Mozart"}, None, None),
        ("create_entity", {"type": "ecrm:E89_Propositional_Object", "label": "p2",
                           "values": {"ecrm:P148_has_component": "p1"}}, None, None),
        ("create_entity", {"type": "ecrm:E89_Propositional_Object", "label": "p3",
                           "values": {"p148_has_component": "Mozart"}}, None, None),
        ("create_entity", {"type": "Persn", "label": "x"}, None, None),
        ("create_entity", {"type": "ecrm:E21_Person", "values": {"nmae": "x"}}, None, None),
        ("describe_tool", {"tool": "create_entity", "type": "ecrm:E89_Propositional_Object"},
         None, None),
    ])
    created = _result(seen[0][2])
    assert not seen[0][1] and any(m["field"] == "values.p148_has_component"
                                  for m in created["missing"])
    assert not seen[2][1]
    mismatch = _result(seen[3][2])
    assert mismatch["code"] == "type_mismatch" and mismatch["field"].startswith(
        "values.p148_has_component")
    assert "Mozart" not in mismatch["allowed"] and len(mismatch["message"]) < 400
    unknown_type, unknown_key = _result(seen[4][2]), _result(seen[5][2])
    assert unknown_type["field"] == "type" and "ecrm:E21_Person" in unknown_type["allowed"]
    assert unknown_key["field"] == "values.nmae" and len(unknown_key["allowed"]) <= 8
    rows = _result(seen[6][2])["data"]
    assert rows[0]["type"] == "ecrm:E89_Propositional_Object"
    assert any(r.get("argument") == "values.p148_has_component" for r in rows)


def test_allowed_items_are_accepted_as_given_and_findings_are_not_repeated(
        tmp_path: Path) -> None:
    path = tmp_path / "cyclic.ttl"
    path.write_text(CYCLIC, encoding="utf-8")
    seen = run_session(load_ir([path], profile_paths=[]), [
        ("create_work", {"label": "w1"}, None, None),
        ("link", {"subject": "w1", "property": "ex:hasPart", "object": "w9"}, None, None),
    ])
    refused = _result(seen[1][2])
    assert refused["code"] == "not_found" and refused["allowed"]
    again = run_session(load_ir([path], profile_paths=[]), [
        ("create_work", {"label": "w1"}, None, None),
        ("link", {"subject": "w1", "property": "ex:hasPart", "object": refused["allowed"][0]},
         None, None),
    ])
    assert not again[1][1], again[1][2]
    findings = refused["findings"]
    assert len(findings) == len({json.dumps(f, sort_keys=True) for f in findings})
