"""The instantiation server through real MCP client sessions (in-process and over stdio)."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from instantiation_helpers import STEPS, paper_calls
from mcp import Client, StdioServerParameters

from kgctl.instantiation.planner import GUARDS
from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir
from kgctl.store import EmbeddedStore, canonical_nquads

PAPER = "10.1021_ic802382p"
OTHER = "other-paper"
ONTOSYN = "https://www.theworldavatar.com/kg/OntoSyn/"
IR = default_ir()
STEPS_QUERY = f"""
SELECT ?order ?type ?label WHERE {{
  ?syn <{ONTOSYN}hasSynthesisStep> ?step . ?step <{ONTOSYN}hasOrder> ?order ; a ?type .
  OPTIONAL {{ ?step <http://www.w3.org/2000/01/rdf-schema#label> ?label }}
}} ORDER BY ?order"""
HEAT_QUERY = f"""
SELECT ?v ?unit WHERE {{
  ?step a <{ONTOSYN}HeatChill> ; <{ONTOSYN}hasTargetTemperature> ?t .
  ?t <http://www.ontology-of-units-of-measure.org/resource/om-2/hasNumericalValue> ?v ;
     <http://www.ontology-of-units-of-measure.org/resource/om-2/hasUnit> ?unit }}"""


async def _build_paper(client: Client) -> list[Any]:
    await client.call_tool("select_paper", {"paper_id": PAPER})
    results = []
    for tool, args in paper_calls(STEPS / f"{PAPER}.json"):
        result = await client.call_tool(tool, args)
        assert not result.is_error, (tool, result.content[0].text)
        results.append(result)
    return results


def _check_read_back(store: EmbeddedStore) -> None:
    truth = json.loads((STEPS / f"{PAPER}.json").read_text())["Synthesis"][0]["steps"]
    rows = list(store.query(STEPS_QUERY, paper_id=PAPER))
    assert [int(r["order"].value) for r in rows] == list(range(1, len(truth) + 1))
    assert [r["type"].value.rsplit("/", 1)[1] for r in rows] == [next(iter(s)) for s in truth]
    temps = {(float(r["v"].value), r["unit"].value.rsplit("/", 1)[1])
             for r in store.query(HEAT_QUERY, paper_id=PAPER)}
    assert temps, "no numeric target temperature read back"
    assert all(unit in {"degreeCelsius", "kelvin"} for _, unit in temps)


def test_build_paper_in_process_and_read_back():
    store = EmbeddedStore()

    async def main() -> None:
        async with Client(build_server(IR, store)) as client:
            results = await _build_paper(client)
            seq = await client.call_tool("show_sequence", {"container": results[0]
                                                           .structured_content["iris"][0]})
            assert {row["status"] for row in seq.structured_content["data"]} == {"ok"}
            orphans = await client.call_tool("find_orphans", {})
            assert orphans.structured_content["data"] == []

    anyio.run(main)
    _check_read_back(store)
    assert len(store.trace(PAPER)) == len(paper_calls(STEPS / f"{PAPER}.json"))


def test_build_paper_over_stdio(tmp_path):
    path = tmp_path / "kg"
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from kgctl.cli import main; main()", "mcp", "serve", "--store", str(path)])

    async def main() -> None:
        async with Client(params) as client:
            await _build_paper(client)

    anyio.run(main)
    store = EmbeddedStore(path)
    try:
        _check_read_back(store)
    finally:
        store.close()


# -- violations -------------------------------------------------------------------------------
HEAT = "create_heat_chill"
SYN = "S1"


def _heat(**extra: Any) -> dict[str, Any]:
    return {"chemical_synthesis": SYN, "order": 2, **extra}


# name, tool, arguments (callables get the setup IRIs), code, field, a value `allowed` holds
CASES: list[tuple[str, str, Any, str, str, Any]] = [
    ("wrong unit", HEAT, _heat(target_temperature={"value": 100, "unit": "kg"}),
     "unit_incompatible", "target_temperature.unit", "degreeCelsius"),
    ("unknown unit", HEAT, _heat(target_temperature={"value": 100, "unit": "furlong"}),
     "unit_unknown", "target_temperature.unit", "kelvin"),
    ("wrong type of linked IRI", HEAT, lambda s: _heat(chemical_synthesis=s["step"]),
     "type_mismatch", "chemical_synthesis", None),
    ("IRI of another paper", HEAT, lambda s: _heat(chemical_synthesis=s["other"]),
     "foreign_iri", "chemical_synthesis", None),
    ("missing required field", "create_add", {"chemical_synthesis": SYN, "order": 2},
     "required_missing", "added_chemical_input", None),
    ("two values for a max-one property", HEAT,
     _heat(step_duration=[{"value": 1, "unit": "h"}, {"value": 2, "unit": "h"}]),
     "max_one", "step_duration", None),
    ("second output of a synthesis", "add_chemical_output", {"subject": SYN, "label": "b"},
     "max_one", "subject", None),
    ("duplicate step order", HEAT, _heat(order=1), "order_duplicate", "order", 2),
    ("gap in order", HEAT, _heat(order=5), "order_gap", "order", 2),
    ("value outside an enumeration", HEAT, _heat(vessel_environment="Helium"),
     "enum_value", "vessel_environment", "Ar"),
    ("non-numeric quantity", HEAT, _heat(step_duration={"value": "long", "unit": "h"}),
     "datatype", "step_duration.value", None),
    ("negative duration", HEAT, _heat(step_duration={"value": -2, "unit": "h"}),
     "range", "step_duration.value", None),
    ("unknown entity", HEAT, _heat(chemical_synthesis="S7"), "not_found",
     "chemical_synthesis", "S1"),
    ("injection in an IRI", HEAT, _heat(chemical_synthesis="<https://x> } ; DROP ALL ; <y>"),
     "invalid_iri", "chemical_synthesis", None),
    ("control characters in a label", HEAT, _heat(label="heat\x00ing"), "invalid_text",
     "label", None),
    ("oversized input", HEAT, _heat(label="x" * 5000), "too_large", "label", None),
    ("unknown argument", HEAT, _heat(temprature={"value": 1, "unit": "K"}),
     "unknown_argument", "temprature", "target_temperature"),
    ("not a boolean", HEAT, _heat(is_sealed="maybe"), "datatype", "is_sealed", None),
    ("duplicate link", "link", lambda s: {"subject": SYN, "property": "ontosyn:hasSynthesisStep",
                                          "object": s["step"]}, "duplicate", "object", None),
]


async def _setup(client: Client) -> dict[str, str]:
    await client.call_tool("select_paper", {"paper_id": OTHER})
    other = await client.call_tool("create_chemical_synthesis",
                                   {"label": "elsewhere", "chemical_output": {"label": "o"}})
    await client.call_tool("select_paper", {"paper_id": "p1"})
    await client.call_tool("create_chemical_synthesis",
                           {"label": SYN, "chemical_output": {"label": "cage"}})
    step = await client.call_tool("create_add", {
        "chemical_synthesis": SYN, "order": 1, "label": "add water",
        "added_chemical_input": {"label": "water"}})
    assert not step.is_error, step.content[0].text
    return {"step": step.structured_content["iris"][0],
            "other": other.structured_content["iris"][0]}


def _run_cases(*, feedback: bool) -> tuple[list[tuple[str, Any, bool, bool]], int]:
    store = EmbeddedStore()
    outcomes: list[tuple[str, Any, bool, bool]] = []

    async def main() -> None:
        async with Client(build_server(IR, store, feedback=feedback)) as client:
            setup = await _setup(client)
            for name, tool, args, *_ in CASES:
                before = canonical_nquads(store, "p1")
                result = await client.call_tool(tool, args(setup) if callable(args) else args)
                payload = json.loads(result.content[0].text)
                changed = canonical_nquads(store, "p1") != before
                outcomes.append((name, payload, result.is_error, changed))

    anyio.run(main)
    return outcomes, len(list(store.triples("p1")))


def test_violation_suite_rejects_with_documented_code():
    outcomes, _ = _run_cases(feedback=True)
    assert len(outcomes) == len(CASES) >= 15
    for (name, _, _, code, field, allowed), (_, payload, is_error, changed) in zip(
            CASES, outcomes, strict=True):
        assert is_error, name
        assert not changed, f"{name}: graph changed"
        assert payload["status"] == "rejected" and payload["code"] == code, (name, payload)
        assert payload["field"] == field, (name, payload)
        assert {"value", "message", "allowed", "hint", "retryable"} <= set(payload)
        if allowed is not None:
            assert any(str(allowed) in str(a) for a in payload["allowed"]), (name, payload)
    assert len({c[3] for c in CASES}) >= 15  # distinct codes


def test_no_feedback_mode_writes_what_the_checks_refused():
    with_feedback, size_with = _run_cases(feedback=True)
    without, size_without = _run_cases(feedback=False)
    assert len(without) == len(CASES)
    written = {name for name, _, is_error, changed in without if not is_error and changed}
    refused = {name for (name, *_), (_, _, is_error, _) in zip(CASES, without, strict=True)
               if is_error}
    # only guards (input that cannot be written at all) stay refused
    assert refused == {c[0] for c in CASES if c[3] in GUARDS}
    # an RDF graph is a set: an accepted duplicate link leaves it as it was
    assert written == {c[0] for c in CASES if c[3] not in GUARDS} - {"duplicate link"}
    assert all(is_error for _, _, is_error, _ in with_feedback)
    assert size_without > size_with


def test_injection_text_in_a_label_is_stored_as_a_literal_only():
    store = EmbeddedStore()
    label = 'x" } ; DROP ALL ; INSERT DATA { <a> <b> <c> } #'

    async def main() -> None:
        async with Client(build_server(IR, store, paper_id="p1")) as client:
            result = await client.call_tool("create_chemical_synthesis",
                                            {"label": label, "chemical_output": {"label": "o"}})
            assert not result.is_error
            found = await client.call_tool("list_instances", {"class_name": "ChemicalSynthesis"})
            assert [row["label"] for row in found.structured_content["data"]] == [label]

    anyio.run(main)
    objects = [t.object.value for t in store.triples("p1")]
    assert label in objects and len(store.papers()) == 1
