"""Questions the query tools once could not express, through a real MCP client session: negation
(text '!=', MINUS over a path), the paper of an entity, an aggregate over aggregates, an aggregate
over unit-converted values, templates that say which rows they drop, and operators refused with
the feedback envelope instead of being ignored."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from retrieval_helpers import mop30_engine, reference

from kgctl.retrieval.server import build_server

PREFIXES = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
PREFIX ontomops: <https://www.theworldavatar.com/kg/ontomops/>
PREFIX ontospecies: <http://www.theworldavatar.com/ontology/ontospecies/OntoSpecies.owl#>
PREFIX om-2: <http://www.ontology-of-units-of-measure.org/resource/om-2/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
V6 = "[V6O6(OCH3)9(SO4)]"
CCDC = "1434668"


@pytest.fixture(scope="module")
def server():
    return build_server(mop30_engine())


class Session:
    """Tool calls of one MCP client session; `q` is the container of the last new_query."""

    def __init__(self, client):
        self.client, self.q = client, ""

    async def ok(self, tool: str, **args) -> dict:
        result = await self._call(tool, args)
        assert not result.is_error, result.structured_content
        if tool == "new_query":
            self.q = result.structured_content["query_id"]
        return result.structured_content

    async def refused(self, tool: str, **args) -> dict:
        result = await self._call(tool, args)
        assert result.is_error
        return result.structured_content

    async def rows(self) -> list[tuple]:
        answer = await self.ok("execute_query", limit=10_000)
        return sorted({tuple(r) for r in answer["rows"]}, key=str)

    async def _call(self, tool: str, args: dict):
        if tool not in ("new_query", "find_entities", "list_templates"):
            args = {"query_id": self.q, **args}
        return await self.client.call_tool(tool, args)


def run(server, script) -> None:
    async def main():
        async with Client(server, mode="legacy") as client:
            await script(Session(client))
    anyio.run(main)


def test_not_equal_on_text_excludes_the_value(server):
    expected = reference(PREFIXES + "SELECT DISTINCT ?f WHERE { ?c a ontomops:ChemicalBuildingUnit"
                         f' ; ontomops:hasCBUFormula ?f FILTER(?f != "{V6}") }}')

    async def script(s):
        await s.ok("new_query", template="cbu")
        view = await s.ok("filter_by_value", variable="formula", value=V6, op="!=")
        assert "!(" in view["sparql"]
        await s.ok("select", variables=["formula"])
        rows = await s.rows()
        assert len(expected) > 50 and rows == expected and (V6,) not in rows

    run(server, script)


def test_not_equal_with_a_property_keeps_entities_without_the_value(server):
    expected = reference(PREFIXES + "SELECT DISTINCT ?m ?c WHERE { ?m a "
                         "ontomops:MetalOrganicPolyhedron OPTIONAL { ?m ontomops:hasCCDCNumber ?c }"
                         " MINUS { ?m "
                         f'ontomops:hasCCDCNumber "{CCDC}" }} }}')

    async def script(s):
        await s.ok("new_query", template="mop_optional")
        await s.ok("filter_by_value", variable="mop", property="ontomops:hasCCDCNumber",
                   value=CCDC, op="!=")
        await s.ok("select", variables=["mop", "ccdc"])
        rows = await s.rows()
        assert rows == expected and all(c != CCDC for _, c in rows)
        assert any(c is None for _, c in rows)  # MOPs without a CCDC number are kept

    run(server, script)


def test_excluding_a_value_no_row_has_is_refused(server):
    async def script(s):
        before = (await s.ok("new_query", template="cbu"))["sparql"]
        for args in ({"variable": "formula"}, {"variable": "cbu",
                                               "property": "ontomops:hasCBUFormula"}):
            feedback = await s.refused("filter_by_value", value="[V6O6(OCH3)9(SO4)", op="!=",
                                       **args)  # misspelt: no closing bracket
            assert feedback["code"] == "nothing_to_exclude" and feedback["sparql"] == before
        assert (await s.ok("show_query"))["sparql"] == before

    run(server, script)


REFUSALS = [
    ("filter_by_value", {"variable": "formula", "value": "[Cu2]", "op": "<"}, "op"),
    ("filter_by_value", {"variable": "formula", "value": "[Cu2]", "op": "~"}, "op"),
    ("filter_by_value", {"variable": "formula", "value": "[Cu2]", "match": "fuzzy"}, "match"),
    ("aggregate", {"function": "COUNT", "variable": "cbu", "having_op": "~",
                   "having_value": 1}, "having_op"),
    ("add_path_constraint", {"variable": "cbu", "target_class": "ontomops:MetalOrganicPolyhedron",
                             "mode": "forbid"}, "mode"),
]


@pytest.mark.parametrize(("tool", "args", "field"), REFUSALS,
                         ids=[f"{t}-{f}-{a.get('op', a.get('match', ''))}"
                              for t, a, f in REFUSALS])
def test_unsupported_operators_are_refused_with_the_envelope(server, tool, args, field):
    async def script(s):
        before = (await s.ok("new_query", template="cbu"))["sparql"]
        feedback = await s.refused(tool, **args)
        assert feedback["code"] == "invalid_value" and feedback["field"] == field
        assert feedback["allowed"] and feedback["sparql"] == before
        assert (await s.ok("show_query"))["sparql"] == before

    run(server, script)


def test_number_filter_refuses_a_text_match_mode(server):
    async def script(s):
        await s.ok("new_query", template="step")
        feedback = await s.refused("filter_by_value", variable="order", value=2,
                                   match="contains")
        assert feedback["code"] == "invalid_value" and feedback["field"] == "match"

    run(server, script)


def test_all_refusal_cases_ran():
    assert len(REFUSALS) == 5


def test_paper_of_an_entity_is_a_variable(server):
    expected = reference(PREFIXES + "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?m a "
                         f'ontomops:MetalOrganicPolyhedron ; ontomops:hasCCDCNumber "{CCDC}" }} }}')
    per_paper = reference(PREFIXES + "SELECT ?g (COUNT(DISTINCT ?s) AS ?n) WHERE { GRAPH ?g { "
                          "?s a ontosyn:ChemicalSynthesis } } GROUP BY ?g")

    async def script(s):
        await s.ok("new_query", template="mop_optional")
        await s.ok("filter_by_value", variable="ccdc", value=CCDC)
        view = await s.ok("add_provenance", variable="mop", name="paper")
        assert "GRAPH ?paper" in view["sparql"] and "paper" in view["columns"]
        await s.ok("select", variables=["paper"])
        assert await s.rows() == expected and len(expected) == 1
        await s.ok("new_query", template="synthesis")
        await s.ok("add_provenance", variable="synthesis", name="paper")
        await s.ok("group_by", variables=["paper"])
        await s.ok("aggregate", function="COUNT", variable="synthesis", distinct=True)
        assert await s.rows() == per_paper and len(per_paper) == 30
        refused = await s.refused("add_provenance", variable="paper")
        assert refused["code"] == "not_a_node"

    run(server, script)


def test_average_of_per_synthesis_counts(server):
    expected = reference(PREFIXES + "SELECT (AVG(?n) AS ?mean) WHERE { { SELECT ?s (COUNT(DISTINCT"
                         " ?c) AS ?n) WHERE { ?s ontosyn:hasChemicalInput ?c . ?c a "
                         "ontosyn:ChemicalInput } GROUP BY ?s } }")

    async def script(s):
        await s.ok("new_query", template="chemical_input")
        await s.ok("group_by", variables=["synthesis"])
        await s.ok("aggregate", function="COUNT", variable="chemical", distinct=True, alias="n")
        view = await s.ok("nest_query")
        assert set(view["variables"]) == {"synthesis", "n"} and view["sparql"].count("SELECT") == 2
        await s.ok("aggregate", function="AVG", variable="n", alias="mean")
        await s.ok("select", variables=["mean"])
        rows = await s.rows()
        assert rows == expected and 1 < float(rows[0][0]) < 100

    run(server, script)


def test_template_says_what_it_requires_and_its_optional_form_keeps_the_rows(server):
    inputs = reference(PREFIXES + "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a "
                       "ontosyn:ChemicalInput }")
    listed = reference(PREFIXES + "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a "
                       "ontosyn:ChemicalInput . ?s ontosyn:hasChemicalInput ?c }")
    no_synthesis = reference(PREFIXES + "SELECT DISTINCT ?x WHERE { ?x "
                             "ontospecies:hasCharacterizationSession ?c . ?c a "
                             "ontospecies:CharacterizationSession MINUS { ?s "
                             "ontosyn:hasChemicalOutput ?x } }")

    async def script(s):
        view = await s.ok("new_query", template="product")
        assert view["requires"] == ["?synthesis ontosyn:hasChemicalOutput ?product"]
        assert view["optional_form"] == "product_optional"
        templates = (await s.client.call_tool("list_templates", {})).structured_content
        assert "left out" in templates["templates"]["product"]
        for template, expected in (("chemical_input", listed), ("chemical_input_optional",
                                                                 inputs)):
            await s.ok("new_query", template=template)
            await s.ok("aggregate", function="COUNT", variable="chemical", distinct=True)
            await s.ok("select", variables=["count_chemical"])
            assert await s.rows() == expected
        assert int(inputs[0][0]) > int(listed[0][0])  # the required link drops rows
        await s.ok("new_query", template="characterisation")
        await s.ok("add_triple", subject="product", property="ontosyn:hasChemicalOutput",
                   inverse=True, mode="exclude")
        await s.ok("select", variables=["product"])
        assert await s.rows() == no_synthesis and no_synthesis

    run(server, script)


def test_optional_form_nests_the_optional_blocks_that_depend_on_the_required_link(server):
    mops = reference(PREFIXES + "SELECT DISTINCT ?m WHERE { ?m a ontomops:MetalOrganicPolyhedron }")

    async def script(s):
        view = await s.ok("new_query", template="mop_optional")
        assert view["requires"] == [] and view["sparql"].count("OPTIONAL") == 3
        rows = (await s.ok("execute_query", limit=10_000))["rows"]
        columns = view["columns"]
        mop, product, formula = (columns.index(c) for c in ("mop", "product", "formula"))
        assert sorted({(r[mop],) for r in rows}) == mops
        lone = [r for r in rows if r[product] is None]
        assert lone and all(r[formula] is None for r in lone)  # no formula joined freely

    run(server, script)


def test_minus_over_a_typed_path(server):
    expected = reference(PREFIXES + "SELECT DISTINCT ?l WHERE { ?s a ontosyn:ChemicalSynthesis ; "
                         "rdfs:label ?l MINUS { ?s ontosyn:hasSynthesisStep ?d . ?d a "
                         "ontosyn:Dry } }")
    everything = reference(PREFIXES + "SELECT DISTINCT ?l WHERE { ?s a ontosyn:ChemicalSynthesis ;"
                           " rdfs:label ?l }")

    async def script(s):
        await s.ok("new_query", template="synthesis")
        view = await s.ok("add_path_constraint", variable="synthesis",
                          target_class="ontosyn:Dry", mode="exclude")
        assert "MINUS" in view["sparql"] and "ontosyn:Dry" in view["sparql"]
        await s.ok("select", variables=["label"])
        assert await s.rows() == expected and len(everything) > len(expected) > 0

    run(server, script)


def test_aggregate_over_unit_converted_values(server):
    expected = reference(PREFIXES + """SELECT (AVG(?v * ?f + ?o) AS ?k) WHERE {
      ?st a ontosyn:HeatChill ; ontosyn:hasTargetTemperature ?t .
      ?t om-2:hasNumericalValue ?v ; om-2:hasUnit ?u .
      VALUES (?u ?f ?o) { (om-2:degreeCelsius 1.0e0 273.15e0) (om-2:kelvin 1.0e0 0.0e0) } }""")
    units = reference(PREFIXES + "SELECT DISTINCT ?u WHERE { ?x ontosyn:hasTargetTemperature/"
                      "om-2:hasUnit ?u }")

    async def script(s):
        await s.ok("new_query", template="heat_chill")
        await s.ok("convert_quantity", variable="heat_chill",
                   property="ontosyn:hasTargetTemperature", unit="K", name="kelvin")
        await s.ok("aggregate", function="AVG", variable="kelvin", alias="mean")
        await s.ok("select", variables=["mean"])
        assert len(units) == 2 and await s.rows() == expected
        refused = await s.refused("convert_quantity", variable="heat_chill",
                                  property="ontosyn:hasTargetTemperature", unit="hour")
        assert refused["code"] == "unknown_unit"

    run(server, script)
