"""Regression tests, through the public doors (MCP client session, CLI), for the defects seen when
compiling public T-Boxes the compiler was not written for."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from corpus_helpers import CORPUS, EMMO_IMPORTS, corpus_ir, run_session
from mcp import Client, StdioServerParameters
from pyoxigraph import NamedNode

from kgctl.cli import cli
from kgctl.compiler.tools import class_tools
from kgctl.ontology import load_ir
from kgctl.store import EmbeddedStore

PIZZA = "https://raw.githubusercontent.com/owlcs/pizza-ontology/refs/heads/master/pizza.owl#"
PROV = "http://www.w3.org/ns/prov#"
TTL_HEAD = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix ex: <https://example.org/a#> .
@prefix ex2: <https://example.org/b#> .
"""


def _ttl(tmp_path: Path, body: str, name: str = "t.ttl") -> Path:
    path = tmp_path / name
    path.write_text(TTL_HEAD + body, encoding="utf-8")
    return path


def _codes(seen) -> list[str | None]:
    return [json.loads(text)["code"] if err else None for _, err, text in seen]


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_add_tool_with_a_type_argument_accepts_it() -> None:
    seen = run_session(corpus_ir("pizza"), [
        ("create_pizza_base", {"type": "ThinAndCrispyBase", "label": "base"}, None, None),
        ("create_pizza", {"type": "Pizza", "label": "p", "base": "base"}, None, None),
        ("add_topping", {"subject": "p", "type": "HamTopping", "label": "ham"}, None, None),
        ("add_topping", {"subject": "p", "label": "ham 2"}, None, None),
        ("add_topping", {"subject": "p", "type": "Spinach", "label": "x"}, None, None),
    ])
    assert _codes(seen) == [None, None, None, "required_missing", "enum_value"]


def test_same_local_name_in_two_namespaces_gives_two_tools(tmp_path: Path) -> None:
    path = _ttl(tmp_path, "ex:Species a owl:Class .\nex2:Species a owl:Class .\n"
                          "ex:Sample a owl:Class .\n")
    ir = load_ir([path], profile_paths=[])
    seen = run_session(ir, [
        ("create_ex_species", {"label": "water"}, None, None),
        ("create_ex2_species", {"label": "ice"}, None, None),
        ("create_sample", {"label": "s1"}, None, None),
    ])
    assert _codes(seen) == [None, None, None]
    created = [json.loads(text)["iris"][0] for _, _, text in seen]
    assert "/Species/" in created[0] and "/Species/" in created[1] and created[0] != created[1]


@pytest.mark.parametrize(("name", "tools"), [
    ("time", {"create_instant", "create_proper_interval", "create_duration",
              "create_date_time_description", "create_trs"}),
    ("prov", {"create_activity", "create_entity", "create_agent", "create_generation",
              "create_association"}),
    ("iao", {"create_information_content_entity", "create_material_entity",
             "create_scalar_measurement_datum", "create_planned_process"}),
])
def test_main_classes_get_create_tools_and_deprecated_ones_none(name: str, tools: set[str]
                                                                ) -> None:
    path = {"time": "time/time.ttl", "prov": "prov/prov-o.ttl", "iao": "iao/iao.owl"}[name]
    result = _cli("compile", str(CORPUS / path), "--no-profile", "--tools", "--json")
    assert result.exit_code == 0, result.output
    assert "create_entity" in {t["name"] for t in json.loads(result.output)}  # over budget
    listing = class_tools(corpus_ir(name, hard=False)).listing()  # the per-class tools
    names = {t["name"] for t in listing}
    assert tools <= names
    kinds = {value for t in listing for value in
             t["input_schema"]["properties"].get("type", {}).get("enum", [])}
    assert "obsolete" not in " ".join(names) and "create_year" not in names
    assert not {"Year", "IAO_0000012", "obsolete_digital_entity"} & kinds  # owl:deprecated


def test_opaque_iris_are_named_by_their_labels_with_their_definitions() -> None:
    battery = _cli("compile", str(CORPUS / "battery/battery.ttl"), "--no-profile", "--tools",
                   "--json", *[f"--ignore-import={p}" for p in EMMO_IMPORTS])
    assert battery.exit_code == 0, battery.output
    battery_tools = {t["name"]: t for t in json.loads(battery.output)}
    iao_tools = {t["name"]: t for t in class_tools(corpus_ir("iao", hard=False)).listing()}
    kinds = battery_tools["create_battery_testing_entity"]["input_schema"]["properties"]["type"]
    assert {"battery_test", "battery_cycler", "thermal_runaway_test"} <= set(kinds["enum"])
    assert not [n for n in battery_tools if "_0" in n and n.count("_") > 4]  # no UUID names
    assert not [n for n in iao_tools if "iao_0" in n or "bfo_0" in n]
    assert "scalar measurement datum" in iao_tools["create_scalar_measurement_datum"][
        "description"]
    ir = json.loads(_cli("compile", str(CORPUS / "iao/iao.owl"), "--no-profile", "--json").output)
    datum = ir["classes"]["http://purl.obolibrary.org/obo/IAO_0000032"]
    assert datum["label"] == "scalar measurement datum"
    assert "is a measurement datum" in datum["comment"]  # the IAO_0000115 definition
    seen = run_session(corpus_ir("iao"), [
        ("create_continuant", {"label": "a sample"}, None, None),
        ("create_information_content_entity", {"type": "document", "label": "paper",
                                               "is_about": "a sample"}, None, None),
        ("create_material_entity", {"type": "material_entity", "label": "balance"}, None,
         None),
        ("link", {"subject": "paper", "property": "obo:is_about", "object": "balance"}, None,
         None),  # the label names the opaque IAO_0000136
    ])
    assert _codes(seen) == [None, None, None, None]
    seen = run_session(corpus_ir("battery"), [
        ("create_battery_testing_entity", {"type": "thermal_runaway_test", "label": "t1"},
         None, None),
        ("list_instances", {"class_name": "thermal_runaway_test"}, None, None),
    ])
    rows = json.loads(seen[1][2])["data"]
    assert [r["label"] for r in rows] == ["t1"]


def test_properties_without_rdfs_domain_work_in_link_and_update(tmp_path: Path) -> None:
    seen = run_session(corpus_ir("sosa"), [  # schema:domainIncludes / rangeIncludes
        ("create_sensor", {"label": "t1"}, None, None),
        ("create_observable_property", {"label": "temperature"}, None, None),
        ("link", {"subject": "t1", "property": "sosa:observes", "object": "temperature"},
         None, None),
        ("link", {"subject": "temperature", "property": "sosa:observes", "object": "t1"},
         None, None),
    ])
    assert _codes(seen) == [None, None, None, "type_mismatch"]
    seen = run_session(corpus_ir("pizza"), [  # no domain, no range at all
        ("create_pizza_base", {"type": "ThinAndCrispyBase", "label": "base"}, None, None),
        ("create_pizza", {"type": "Pizza", "label": "p", "base": "base"}, None, None),
        ("update_property", {"entity": "p", "property": "pizza:hasCountryOfOrigin",
                             "value": ["Italy"]}, None, None),  # a named individual
        ("link", {"subject": "p", "property": "pizza:hasCountryOfOrigin",
                  "object": "England"}, None, None),
    ])
    assert _codes(seen) == [None, None, None, None]


def test_datatypes_lexical_forms_and_facets(tmp_path: Path) -> None:
    path = _ttl(tmp_path, """
ex:Run a owl:Class .
ex:started a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range xsd:dateTime .
ex:day a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range xsd:date .
ex:year a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range xsd:gYear .
ex:month a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range xsd:gMonth .
ex:page a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range xsd:anyURI .
ex:percent a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range [ a rdfs:Datatype ;
    owl:onDatatype xsd:integer ;
    owl:withRestrictions ( [ xsd:minInclusive 0 ] [ xsd:maxInclusive 100 ] ) ] .
ex:code a owl:DatatypeProperty ; rdfs:domain ex:Run ; rdfs:range ex:Code .
ex:Code a rdfs:Datatype ; owl:onDatatype xsd:string ;
    owl:withRestrictions ( [ xsd:pattern "[A-Z]{2}[0-9]{3}" ] ) .
""")
    ok = {"started": "2024-05-31T14:30:00Z", "day": "2024-05-31", "year": "2024",
          "month": "--05", "page": "https://example.org/x", "percent": 40, "code": "AB123"}
    bad = [("started", "yesterday", "datatype"), ("day", "2024-02-30", "datatype"),
           ("year", "24AD", "datatype"), ("month", "May", "datatype"),
           ("page", "not a uri", "datatype"), ("percent", 120, "range"),
           ("percent", -1, "range"), ("code", "abc", "datatype")]
    steps = [("create_run", {"label": "ok", **ok}, None, None)] + [
        ("create_run", {"label": "x", field: value}, (code,), None) for field, value, code in bad]
    seen = run_session(load_ir([path], profile_paths=[]), steps)
    assert _codes(seen) == [None, *[code for *_, code in bad]]


def test_cardinality_zero_inverse_restrictions_and_defined_classes(tmp_path: Path) -> None:
    path = _ttl(tmp_path, """
ex:Person a owl:Class .
ex:Parent a owl:Class ; rdfs:subClassOf ex:Person .
ex:Robot a owl:Class .
ex:Child a owl:Class ; rdfs:subClassOf ex:Person , [ a owl:Restriction ;
    owl:onProperty [ owl:inverseOf ex:hasChild ] ; owl:allValuesFrom ex:Parent ] .
ex:hasChild a owl:ObjectProperty .
ex:nickname a owl:DatatypeProperty ; rdfs:domain ex:Person .
ex:Baby a owl:Class ; rdfs:subClassOf ex:Child , [ a owl:Restriction ;
    owl:onProperty ex:nickname ; owl:maxCardinality 0 ] .
ex:Shade a owl:Class .
ex:light a ex:Shade . ex:dark a ex:Shade . ex:neon a ex:Shade .
ex:shade a owl:ObjectProperty .
ex:Paint a owl:Class .
ex:CalmPaint a owl:Class ; owl:equivalentClass [ owl:intersectionOf ( ex:Paint
    [ a owl:Restriction ; owl:onProperty ex:shade ;
      owl:allValuesFrom [ owl:oneOf ( ex:light ex:dark ) ] ] ) ] .
""")
    ir = load_ir([path], profile_paths=[])
    calm = "https://example.org/a#CalmPaint"
    assert "https://example.org/a#Paint" in ir.classes[calm].ancestors
    assert any(r.inverse and r.on_property.endswith("hasChild") for r in ir.restrictions)
    seen = run_session(ir, [
        ("create_parent", {"label": "ann"}, None, None),
        ("create_robot", {"label": "r2"}, None, None),
        ("create_child", {"label": "bob"}, None, None),
        ("link", {"subject": "ann", "property": "ex:hasChild", "object": "bob"}, None, None),
        ("link", {"subject": "r2", "property": "ex:hasChild", "object": "bob"}, None, None),
        ("create_baby", {"label": "cy", "nickname": "cici"}, None, None),
        ("create_baby", {"label": "cy"}, None, None),
        ("update_property", {"entity": "cy", "property": "ex:nickname", "value": ["cici"]},
         None, None),
        ("create_calm_paint", {"label": "p1", "shade": "light"}, None, None),
        ("create_calm_paint", {"label": "p2", "shade": "neon"}, None, None),
        ("create_paint", {"label": "p3"}, None, None),
        ("link", {"subject": "p3", "property": "ex:shade", "object": "neon"}, None, None),
        ("link", {"subject": "p1", "property": "ex:shade", "object": "neon"}, None, None),
    ])
    assert _codes(seen) == [None, None, None, None, "type_mismatch", "unknown_argument", None,
                            "cardinality", None, "enum_value", None, None, "enum_value"]


def test_owl_imports_followed_locally_and_a_missing_one_named(tmp_path: Path) -> None:
    battery = str(CORPUS / "battery/battery.ttl")
    ignore = [f"--ignore-import={p}" for p in EMMO_IMPORTS]
    result = _cli("compile", battery, "--no-profile", "--json", *ignore)
    assert result.exit_code == 0, result.output
    ir = json.loads(result.output)
    assert {"battery-testing.ttl", "battery-reference.ttl"} <= set(ir["ontologies"])
    assert any(p["label"] == "hasTestEquipment" for p in ir["properties"].values())
    missing = _cli("compile", battery, "--no-profile")
    assert missing.exit_code == 2
    line = missing.output.strip()
    assert line.startswith("error:") and "\n" not in line
    assert "owl:imports <https://w3id.org/emmo/" in line and "network" in line
    # a folder given with --imports is searched too
    module = _ttl(tmp_path / "lib", "ex:Thing2 a owl:Class .\n<https://example.org/m> a "
                  "owl:Ontology .\n", "m.ttl") if (tmp_path / "lib").mkdir() is None else None
    main_file = _ttl(tmp_path, "<https://example.org/main> a owl:Ontology ; owl:imports "
                     "<https://example.org/m> .\nex:Thing1 a owl:Class .\n")
    found = _cli("compile", str(main_file), "--no-profile", "--json", "--imports",
                 str(module.parent))
    assert found.exit_code == 0 and "Thing2" in found.output, found.output


def test_imports_resolved_by_iri_from_named_files_and_unrelated_files_never_read(
        tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    _ttl(lib, "<https://example.org/core/> a owl:Ontology .\nex:Part a owl:Class .\n",
         "core-v2.ttl")
    main_file = _ttl(tmp_path, "<https://example.org/main> a owl:Ontology ; owl:imports "
                     "<https://example.org/core/> .\nex:Whole a owl:Class .\n")
    (tmp_path / "broken.ttl").write_text("@prefix ex: <http://e/> .\nex:a ex:b \"open .\n",
                                         encoding="utf-8")
    found = _cli("compile", str(main_file), "--no-profile", "--json", "--imports",
                 str(lib / "core-v2.ttl"))
    assert found.exit_code == 0 and "Part" in found.output, found.output
    missing = _cli("compile", str(main_file), "--no-profile", "--json")
    assert missing.exit_code == 2 and "broken.ttl" not in missing.output  # never read
    assert "owl:imports <https://example.org/core/>" in missing.output


def test_unsupported_syntax_says_so_and_lists_the_supported_ones() -> None:
    result = _cli("compile", str(CORPUS / "functional/ms_import.owl"), "--no-profile")
    assert result.exit_code == 2
    line = result.output.strip()
    assert line.startswith("error: ms_import.owl: format not supported: OWL functional syntax")
    assert "supported: Turtle" in line and "RDF/XML" in line and "\n" not in line


def test_kgctl_provenance_never_mixes_with_prov_data() -> None:
    store = EmbeddedStore()
    run_session(corpus_ir("prov"), [
        ("create_activity", {"label": "baking"}, None, None),
        ("create_entity", {"label": "cake", "was_generated_by": "baking"}, None, None),
    ], store=store)
    rows = list(store.query(f"SELECT ?a WHERE {{ GRAPH ?g {{ ?a a <{PROV}Activity> }} }}"))
    assert len(rows) == 1 and "/Activity/" in rows[0]["a"].value
    generated = list(store.query(f"SELECT ?x WHERE {{ GRAPH ?g {{ ?a <{PROV}generated> ?x }} }}"))
    assert generated == []
    calls = list(store.query("SELECT ?c WHERE { GRAPH ?g { ?c a ?t } }",
                             bindings={"t": NamedNode("https://w3id.org/kgctl/ns#Call")}))
    assert len(calls) == 2


def test_mcp_serve_takes_an_ontology_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from kgctl.cli import main; main()", "mcp", "serve", "--store",
        str(tmp_path / "kg"), "--paper", "station", "--ontology",
        str(CORPUS / "sosa/sosa.ttl"), "--no-profile"], env=dict(os.environ))

    async def main() -> None:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"create_entity", "link"} <= names  # per-class tools exceed the budget
            made = await client.call_tool("create_entity", {"type": "sosa:Sensor",
                                                            "label": "t1"})
            assert not made.is_error, made.content[0].text

    anyio.run(main)


def test_extract_and_demo_take_an_ontology(tmp_path: Path) -> None:
    trace = tmp_path / "station.jsonl"
    calls = [("create_entity", {"type": "sosa:Sensor", "label": "t1"}),
             ("create_entity", {"type": "sosa:Observation", "label": "o1", "values": {
                 "made_by_sensor": ["t1"], "result_time": ["2017-06-06T12:36:12Z"]}})]
    trace.write_text("".join(json.dumps({
        "paper_id": "station", "seq": i, "tool": tool, "arguments": args,
        "time": "2024-01-01T00:00:00Z"}) + "\n" for i, (tool, args) in enumerate(calls, 1)),
        encoding="utf-8")
    store = tmp_path / "kg"
    sosa = str(CORPUS / "sosa/sosa.ttl")
    result = _cli("extract", "--replay", str(trace), "--ontology", sosa, "--no-profile",
                  "--store", str(store))
    assert result.exit_code == 0, result.output
    opened = EmbeddedStore(store)
    rows = list(opened.query("SELECT ?o WHERE { GRAPH ?g { ?o a ?t } }", bindings={
        "t": NamedNode("http://www.w3.org/ns/sosa/Observation")}))
    opened.close()
    assert len(rows) == 1
    without_llm = _cli("demo", "--ontology", sosa, "--workdir", str(tmp_path / "d"))
    assert without_llm.exit_code == 2 and "--ontology needs --llm" in without_llm.output
    bad = _cli("extract", "paper.txt", "--ontology", str(CORPUS / "functional/ms_import.owl"))
    assert bad.exit_code == 2 and "format not supported" in bad.output


def test_label_language_is_configurable_english_first() -> None:
    path = CORPUS / "time/time.ttl"
    spanish = _cli("compile", str(path), "--no-profile", "--json", "--lang", "es")
    assert spanish.exit_code == 0, spanish.output
    assert json.loads(spanish.output)["classes"][
        "http://www.w3.org/2006/time#Instant"]["label"] == "instante de tiempo."
    english = class_tools(load_ir([path], profile_paths=[])).listing()
    spanish_tools = class_tools(load_ir([path], profile_paths=[], languages=("es", ""))).listing()

    def instant(listing: list[dict]) -> str:
        return next(t["description"] for t in listing if t["name"] == "create_instant")

    assert instant(english).startswith("Create one Time instant.")
    assert instant(spanish_tools).startswith("Create one instante de tiempo.")
    # tool names stay those of the readable local names, whatever the language
    assert {t["name"] for t in spanish_tools} == {t["name"] for t in english}


def test_a_class_defined_by_one_of_gets_no_create_tool_its_individuals_are_values() -> None:
    result = _cli("compile", str(CORPUS / "pizza/pizza.owl"), "--no-profile", "--tools",
                  "--json")
    assert result.exit_code == 0, result.output
    listing = json.loads(result.output)
    kinds = {value for t in listing
             for value in t["input_schema"]["properties"].get("type", {}).get("enum", [])}
    assert "create_country" not in {t["name"] for t in listing} and "Country" not in kinds
    seen = run_session(corpus_ir("pizza"), [
        ("create_pizza_base", {"type": "ThinAndCrispyBase", "label": "base"}, None, None),
        ("create_pizza", {"type": "RealItalianPizza", "label": "p", "base": "base",
                          "country_of_origin": "Italy"}, None, None),
        ("create_pizza", {"type": "RealItalianPizza", "label": "q", "base": "base",
                          "country_of_origin": "Spain"}, None, None),
    ])
    assert _codes(seen) == [None, None, "not_found"]
