"""Retrieval on a graph it was not written for (the W3C SOSA examples, tests/retrieval_helpers):
each defect of issue 28 through a real MCP session, checked against hand-written SPARQL."""

from __future__ import annotations

import json

import anyio
import pyoxigraph as ox
import pytest
from click.testing import CliRunner
from mcp import Client
from retrieval_helpers import SOSA, SOSA_TBOX, sosa_engine

from kgctl.cli import cli
from kgctl.packs import load_pack
from kgctl.retrieval.server import build_server

SKOS = """@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix sosa: <http://www.w3.org/ns/sosa/> .
<http://example.org/voc/accordion> a skos:Concept ; skos:prefLabel "accordion"@en .
<http://example.org/data/sensor/926> sosa:observes _:p .
_:p a sosa:ObservableProperty ; skos:prefLabel "electric power"@en ;
  sosa:isObservedBy <http://example.org/data/sensor/926> .
<http://example.org/data/iceCore/12#observation> sosa:usedProcedure
  <http://example.org/voc/accordion> .
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    extra = tmp_path_factory.mktemp("skos") / "vocabulary.ttl"
    extra.write_text(SKOS)
    return sosa_engine(extra)


@pytest.fixture(scope="module")
def server(engine):
    return build_server(engine)


def session(server, steps):
    """Run `steps(call)` in one MCP client session; call(tool, args) -> (is_error, payload)."""
    out = {}

    async def main():
        async with Client(server, mode="legacy") as client:
            async def call(tool, args):
                result = await client.call_tool(tool, args)
                return result.is_error, json.loads(result.content[0].text)
            out["value"] = await steps(call)

    anyio.run(main)
    return out["value"]


def rows(engine, sparql):
    solutions = engine.store.query(sparql, union=True)
    names = [v.value for v in solutions.variables]
    return sorted(tuple(None if s[n] is None else s[n].value for n in names) for s in solutions)


P = ("PREFIX sosa: <http://www.w3.org/ns/sosa/> PREFIX rdfs: "
     "<http://www.w3.org/2000/01/rdf-schema#> ")


def test_path_types_its_end_and_follows_declared_inverses(server, engine):
    """The end of a path is typed unless the T-Box guarantees it; hosting stated as
    sosa:hosts in one file and sosa:isHostedBy in another is followed both ways."""
    async def steps(call):
        _, q = await call("new_query", {"template": "platform"})
        err, view = await call("add_path_constraint", {"query_id": q["query_id"],
                                                        "variable": "platform",
                                                        "target_class": "sosa:Sensor"})
        assert not err, view
        _, answer = await call("execute_query", {"query_id": q["query_id"]})
        return view, answer
    view, answer = session(server, steps)
    assert "(sosa:hosts|^sosa:isHostedBy)" in view["sparql"]
    assert "?sensor a sosa:Sensor" in view["sparql"]
    expected = rows(engine, P + "SELECT DISTINCT ?p WHERE { ?p a sosa:Platform ; "
                    "(sosa:hosts|^sosa:isHostedBy) ?s . ?s a sosa:Sensor }")
    i = answer["columns"].index("platform")
    assert len(expected) == 2 and sorted({(r[i],) for r in answer["rows"]}) == expected


def test_path_options_are_dry_run_and_ranked_by_use(server):
    async def steps(call):
        _, q = await call("new_query", {"template": "platform"})
        return await call("add_path_constraint", {"query_id": q["query_id"],
                                                  "variable": "platform",
                                                  "target_class": "sosa:Platform"})
    err, feedback = session(server, steps)
    assert err and feedback["code"] == "ambiguous_path"
    options = feedback["options"]
    assert len(options) == 2 and all("used" in o["label"] for o in options)
    counts = [int(o["label"].split("used ")[1].split()[0]) for o in options]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0


def test_entity_filter_takes_untyped_and_external_iris(server):
    async def steps(call):
        _, q = await call("new_query", {"template": "observation"})
        qid = q["query_id"]
        await call("add_triple", {"query_id": qid, "subject": "observation",
                                  "property": "sosa:usedProcedure", "object": "procedure"})
        return await call("filter_by_entity", {"query_id": qid, "variable": "procedure",
                                               "entities": ["http://example.org/voc/accordion"]})
    err, view = session(server, steps)
    assert not err, view
    assert "<http://example.org/voc/accordion>" in view["sparql"]


def test_text_compared_as_number_with_an_explicit_cast(server):
    async def steps(call):
        _, q = await call("new_query", {"template": "observation"})
        qid = q["query_id"]
        err, view = await call("filter_by_value", {"query_id": qid, "variable": "observation",
                                                   "property": "sosa:hasSimpleResult",
                                                   "value": 240, "op": ">="})
        assert not err, view
        _, answer = await call("execute_query", {"query_id": qid})
        return view, answer
    view, answer = session(server, steps)
    assert "cast" in view["change"]
    assert [r[0] for r in answer["rows"]] == ["http://example.org/data/iceCore/12#observation"]


def test_dates_compare_by_value(server, engine):
    async def steps(call):
        _, q = await call("new_query", {"template": "observation"})
        qid = q["query_id"]
        err, view = await call("filter_by_value", {"query_id": qid, "variable": "observation",
                                                   "property": "sosa:resultTime",
                                                   "value": "2017-04-15", "op": ">"})
        assert not err, view
        _, answer = await call("execute_query", {"query_id": qid})
        return answer
    answer = session(server, steps)
    expected = rows(engine, P + "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT ?o "
                    "WHERE { ?o a sosa:Observation ; sosa:resultTime ?t FILTER(isLiteral(?t) "
                    "&& ?t > \"2017-04-15T00:00:00Z\"^^xsd:dateTime) }")
    assert len(expected) == 3 and sorted({(r[0],) for r in answer["rows"]}) == expected


def test_object_property_holding_literals_is_filtered_as_a_value(server):
    """sosa:hasSimpleResult holds literals; sosa:resultTime holds a node in one file: the
    literal-typed variable keeps the literals only."""
    async def steps(call):
        _, q = await call("new_query", {"template": "actuation"})
        qid = q["query_id"]
        err, view = await call("filter_by_value", {"query_id": qid, "variable": "actuation",
                                                   "property": "sosa:hasSimpleResult",
                                                   "value": True})
        assert not err, view
        _, o = await call("new_query", {"template": "observation"})
        err, view = await call("add_triple", {"query_id": o["query_id"],
                                              "subject": "observation",
                                              "property": "sosa:resultTime", "object": "t"})
        assert not err, view
        return view
    view = session(server, steps)
    assert "FILTER(ISLITERAL(?t))" in view["sparql"]


def test_find_entities_says_no_match_and_reads_skos_labels(server):
    async def steps(call):
        none = await call("find_entities", {"label": "London"})
        skos = await call("find_entities", {"label": "electric power"})
        return none, skos
    (err, none), (_, skos) = session(server, steps)
    assert not err and none["no_match"] and none["candidates"] == []
    assert "skos:prefLabel" in skos["label_properties"]
    assert skos["candidates"][0]["label"] == "electric power"
    assert skos["candidates"][0]["value"].startswith("urn:kgctl:bnode:")  # skolemised


def test_select_hides_a_group_key_and_says_so(server):
    async def steps(call):
        _, q = await call("new_query", {"template": "sensor"})
        qid = q["query_id"]
        await call("add_triple", {"query_id": qid, "subject": "sensor",
                                  "property": "sosa:observes", "object": "property"})
        await call("group_by", {"query_id": qid, "variables": ["sensor", "property"]})
        await call("aggregate", {"query_id": qid, "function": "COUNT", "alias": "n"})
        _, view = await call("select", {"query_id": qid, "variables": ["sensor", "n"]})
        _, answer = await call("execute_query", {"query_id": qid})
        return view, answer
    view, answer = session(server, steps)
    assert answer["columns"] == ["sensor", "n"]
    assert "?property stay in GROUP BY but are not shown" in view["change"]


def test_top_k_answer_is_not_truncated(server):
    async def steps(call):
        _, q = await call("new_query", {"template": "observation"})
        qid = q["query_id"]
        await call("order_by", {"query_id": qid, "variable": "observation", "limit": 3})
        _, answer = await call("execute_query", {"query_id": qid, "limit": 100})
        return answer
    answer = session(server, steps)
    assert len(answer["rows"]) == 3 and answer["truncated"] is False


def test_run_with_blank_nodes_never_writes_the_store(tmp_path):
    store = tmp_path / "store"
    runner = CliRunner()
    query = tmp_path / "q.rq"
    query.write_text("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    data = SOSA / "data" / "tree-height-sosa.ttl"  # results are blank nodes
    first = runner.invoke(cli, ["query", "run", str(query), "--data", str(data), "--json"])
    assert first.exit_code == 0, first.output
    store.mkdir()
    empty = runner.invoke(cli, ["query", "run", str(query), "--store", str(store), "--json"])
    both = runner.invoke(cli, ["query", "run", str(query), "--store", str(store), "--data",
                               str(data), "--json"])
    again = runner.invoke(cli, ["query", "run", str(query), "--store", str(store), "--json"])
    n = [json.loads(r.output)["rows"][0][0] for r in (first, empty, both, again)]
    assert int(n[0]) > 20 and n[1] == n[3] == "0" and n[2] == n[0]


def test_shell_starts_on_any_ontology():
    data = [a for f in sorted((SOSA / "data").glob("*.ttl")) for a in ("--data", str(f))]
    onto = [a for f in SOSA_TBOX for a in ("--ontology", str(f))]
    result = CliRunner().invoke(cli, ["query", "shell", *data, *onto, "--no-profile",
                                      "--template", "sensor"],
                                input='add_triple {"subject": "sensor", "property": '
                                      '"rdfs:label", "object": "name"}\nexecute_query {}\n')
    assert result.exit_code == 0, result.output
    assert "Bosch Sensortec BMP282" in result.output


TBOX_AND_DATA = """@prefix ex: <http://example.org/zoo#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Person a owl:Class . ex:Company a owl:Class . ex:Charity a owl:Class .
ex:Animal a owl:Class . ex:Dog a owl:Class ; rdfs:subClassOf ex:Animal .
ex:owns a owl:ObjectProperty ; rdfs:domain ex:Person ; rdfs:range ex:Animal .
ex:employs a owl:ObjectProperty ; rdfs:range ex:Person ;
  rdfs:domain [ a owl:Class ; owl:unionOf ( ex:Company ex:Charity ) ] .
ex:weight a owl:DatatypeProperty ; rdfs:domain ex:Animal .
ex:colour a owl:ObjectProperty ; rdfs:domain ex:Animal .
ex:ann a ex:Person ; rdfs:label "Ann" ; ex:owns ex:rex, ex:tom .
ex:rex a ex:Dog ; rdfs:label "Rex" ; ex:weight "9.5" ; ex:colour "brown" .
ex:tom a ex:Animal ; rdfs:label "Tom" ; ex:weight "30" .
ex:acme a ex:Company ; rdfs:label "Acme" ; ex:employs ex:ann .
ex:help a ex:Charity ; rdfs:label "Help" ; ex:employs ex:ann .
"""


def zoo_server(tmp_path):
    """The query server over the zoo file, its T-Box read from the file itself."""
    from kgctl.retrieval.commands import build_engine
    from kgctl.retrieval.loading import open_graph

    data = tmp_path / "zoo.ttl"
    data.write_text(TBOX_AND_DATA)
    return build_server(build_engine(open_graph(None, (data,)), None, data=(data,)))


def shell(tmp_path, lines, *args):
    data = tmp_path / "zoo.ttl"
    data.write_text(TBOX_AND_DATA)
    result = CliRunner().invoke(cli, ["query", "shell", "--data", str(data), *args],
                                input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    return result.output


def test_tbox_stored_with_the_data_is_read(tmp_path):
    out = shell(tmp_path, ['describe_class {"class_name": "ex:Animal"}'], "--template", "person")
    description = json.loads(out[out.index("{", out.index("}\n") + 1):])
    assert description["instances"] == 2 and description["subclasses"] == ["ex:Dog"]


def test_union_domain_path_types_its_end(tmp_path):
    """ex:employs has the domain Company or Charity: the path from a person to a company types
    its end (before: no type pattern, so the charity was counted as a company)."""
    async def steps(call):
        _, q = await call("new_query", {"template": "person"})
        qid = q["query_id"]
        err, view = await call("add_path_constraint", {"query_id": qid, "variable": "person",
                                                        "target_class": "ex:Company"})
        assert not err, view
        await call("aggregate", {"query_id": qid, "function": "COUNT", "variable": "company",
                                 "distinct": True, "alias": "n"})
        await call("select", {"query_id": qid, "variables": ["n"]})
        _, answer = await call("execute_query", {"query_id": qid})
        return view, answer
    view, answer = session(zoo_server(tmp_path), steps)
    assert "?company a ex:Company" in view["sparql"]
    assert answer["rows"] == [["1"]]  # Acme; Help is a charity


def test_text_numbers_order_and_average_as_numbers(tmp_path):
    out = shell(tmp_path, ['add_triple {"subject": "animal", "property": "ex:weight", '
                           '"object": "w"}', 'order_by {"variable": "w", "descending": true}',
                           'select {"variables": ["animal_label"]}', 'execute_query {}'],
                "--template", "animal")
    assert "cast to xsd:double as ?w_number" in out
    rows = json.loads(out[out.rindex('{\n  "query_id"'):])["rows"]
    assert rows == [["Tom"], ["Rex"]]  # 30 > 9.5, not "9.5" > "30"


def test_schema_is_read_again_when_the_store_changes(engine):
    before = {c.curie: c.instances for c in engine.list_classes().classes}
    engine.store.import_data(b'<http://example.org/data/new> <http://www.w3.org/1999/02/22-'
                             b'rdf-syntax-ns#type> <http://www.w3.org/ns/sosa/Sensor> '
                             b'<http://example.org/added> .\n',
                             format=ox.RdfFormat.N_QUADS)
    engine.refresh_seconds = 0.0
    after = {c.curie: c.instances for c in engine.list_classes().classes}
    assert after["sosa:Sensor"] == before["sosa:Sensor"] + 1


def test_language_match_and_skipped_templates(server, engine):
    async def steps(call):
        _, listed = await call("list_templates", {})
        _, q = await call("new_query", {"template": "feature_of_interest"})
        qid = q["query_id"]
        await call("add_triple", {"query_id": qid, "subject": "feature_of_interest",
                                  "property": "rdfs:label", "object": "name"})
        err, view = await call("filter_by_value", {"query_id": qid, "variable": "name",
                                                   "value": "en", "match": "language"})
        assert not err, view
        _, answer = await call("execute_query", {"query_id": qid})
        return listed, answer
    listed, answer = session(server, steps)
    assert listed["skipped"] == {} and "sensor" in listed["templates"]
    expected = rows(engine, P + "SELECT DISTINCT ?f ?n WHERE { ?f a sosa:FeatureOfInterest ; "
                    "rdfs:label ?n FILTER(LANGMATCHES(LANG(?n), \"en\")) }")
    i, j = answer["columns"].index("feature_of_interest"), answer["columns"].index("name")
    assert len(expected) > 5 and sorted({(r[i], r[j]) for r in answer["rows"]}) == expected


def test_run_takes_the_prefixes_of_the_ontology(tmp_path):
    query = tmp_path / "q.rq"
    query.write_text("SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a sosa:Sensor }")
    data = [a for f in sorted((SOSA / "data").glob("*.ttl")) for a in ("--data", str(f))]
    result = CliRunner().invoke(cli, ["query", "run", str(query), *data, "--ontology",
                                      str(SOSA_TBOX[0]), "--no-profile", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["rows"] == [["7"]]


def test_shell_lists_templates_and_skips_those_that_do_not_fit():
    data = [a for f in sorted((SOSA / "data").glob("*.ttl")) for a in ("--data", str(f))]
    onto = [a for f in SOSA_TBOX for a in ("--ontology", str(f))]
    result = CliRunner().invoke(cli, ["query", "shell", *data, *onto, "--no-profile"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert "sensor" in listed["templates"] and "synthesis" not in listed["templates"]
    assert not listed["skipped"]  # another pack's template files are not even read
    engine = sosa_engine(templates=load_pack("mop30").part("templates"))  # another T-Box's
    skipped = engine.list_templates().skipped
    assert "unknown prefix" in skipped["cbu.rq"] and "synthesis" not in engine.templates


def test_a_day_given_for_date_times_keeps_that_day(server, engine):
    async def steps(call):
        _, q = await call("new_query", {"template": "observation"})
        qid = q["query_id"]
        err, view = await call("filter_by_value", {"query_id": qid, "variable": "observation",
                                                   "property": "sosa:resultTime",
                                                   "value": "2017-04-12"})
        assert not err, view
        _, answer = await call("execute_query", {"query_id": qid})
        return answer
    answer = session(server, steps)
    expected = rows(engine, P + "SELECT ?o WHERE { ?o a sosa:Observation ; sosa:resultTime ?t "
                    "FILTER(isLiteral(?t) && STRSTARTS(STR(?t), \"2017-04-12\")) }")
    assert len(expected) == 2 and sorted({(r[0],) for r in answer["rows"]}) == expected


def test_properties_chain_from_a_node_of_no_known_class(server):
    """QUDT units are IRIs of a vocabulary the T-Box does not declare: a property from such a
    node is left to the dry run, not refused."""
    async def steps(call):
        _, q = await call("new_query", {"template": "observation"})
        qid = q["query_id"]
        for subject, prop, obj in (("observation", "sosa:hasResult", "result"),
                                   ("result", "qudt:unit", "unit")):
            err, view = await call("add_triple", {"query_id": qid, "subject": subject,
                                                  "property": prop, "object": obj})
            assert not err, view
        return await call("add_triple", {"query_id": qid, "subject": "unit",
                                         "property": "rdfs:label", "mode": "optional"})
    err, view = session(server, steps)
    assert not err and view["variables"]["unit"] == "rdfs:Resource"


def test_object_property_holding_literals_in_the_data(tmp_path):
    """ex:colour is declared an object property; the data gives it text: filtered as a value
    (before: refused as an empty result)."""
    zoo = zoo_server(tmp_path)

    async def steps(call):
        _, q = await call("new_query", {"template": "animal"})
        err, view = await call("filter_by_value", {"query_id": q["query_id"],
                                                   "variable": "animal", "property": "ex:colour",
                                                   "value": "brown"})
        assert not err, view
        _, answer = await call("execute_query", {"query_id": q["query_id"]})
        return view, answer
    view, answer = session(zoo, steps)
    assert "ex:colour ?animal_colour" in view["sparql"]
    assert [r[0] for r in answer["rows"]] == ["http://example.org/zoo#rex"]
