"""The published input schemas say exactly what the server takes, in both directions, and
every violation code of docs/instantiation.md is still reachable."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from kgctl.compiler import compile_tools
from kgctl.instantiation.engine import Instantiator
from kgctl.instantiation.findings import Rejected
from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir, load_ir
from kgctl.store import EmbeddedStore, canonical_nquads

ROOT = Path(__file__).parent.parent
TRACES = ROOT / "domains" / "mop30" / "benchmark" / "traces"
DOCS = ROOT / "docs" / "instantiation.md"
DOPING = Path(__file__).parent / "data" / "ontology" / "doping.ttl"
IR = default_ir()
PAPER = "p1"
HEAT = "create_heat_chill"


def _heat(**extra: Any) -> dict[str, Any]:
    return {"chemical_synthesis": "S1", "order": 2, "dry_run": True, **extra}


# tool, arguments, whether the published schema admits them; the server must agree
PAIRS: list[tuple[str, dict[str, Any], bool]] = [
    (HEAT, _heat(uses_equipment=["oven"]), True),
    (HEAT, _heat(uses_equipment="oven"), False),  # the schema says array
    (HEAT, _heat(vacuum=True), True),
    (HEAT, _heat(vacuum="yes"), False),
    (HEAT, _heat(vacuum=[True]), False),  # one value, not a list
    (HEAT, {**_heat(), "order": 2.0}, True),  # JSON Schema: 2.0 is an integer
    (HEAT, {**_heat(), "order": "2"}, False),
    (HEAT, _heat(target_temperature="160 °C"), True),  # free text, as written
    (HEAT, _heat(target_temperature="room temperature"), True),
    (HEAT, _heat(target_temperature={"value": 160, "unit": "°C"}), True),
    (HEAT, _heat(target_temperature={"value": "160", "unit": "°C"}), False),
    (HEAT, _heat(target_temperature=160), False),
    (HEAT, _heat(vessel_environment="Vacuum"), True),
    (HEAT, _heat(vessel_environment="vacuum"), False),  # the listed spellings only
    (HEAT, {**_heat(), "dry_run": "yes"}, False),
    (HEAT, _heat(evidence={"quote": "heated", "start": 12, "end": 18}), True),
    (HEAT, _heat(evidence={"quote": "heated", "start": "12"}), False),
    (HEAT, _heat(evidence="heated"), False),
    (HEAT, _heat(step_duration=["1 h"]), False),
    (HEAT, _heat(parameter=["stirred"]), True),
    (HEAT, _heat(parameter=[5]), False),  # a number where the schema says string
    ("list_instances", {"class_name": "HeatChill"}, True),
    ("list_instances", {"class": "HeatChill"}, False),  # unknown arguments, every tool
    ("link", {"subject": "S1", "property": "ontosyn:hasSynthesisStep", "object": "S1",
              "dry_run": True, "force": True}, False),
    ("delete_entity", {"entity": "S1", "dry_run": True}, True),
    ("delete_entity", {"entity": "S1", "dry_run": True, "cascade": False}, False),
    # update_property's value is any JSON value: the property decides, as in create tools
    ("update_property", {"entity": "S1", "property": "ontosyn:hasEquipment",
                         "value": ["oven"], "dry_run": True}, True),

]


def test_server_accepts_exactly_what_the_schema_admits() -> None:
    store = EmbeddedStore()
    outcomes: list[tuple[bool, str]] = []

    async def main() -> None:
        async with Client(build_server(IR, store, paper_id=PAPER)) as client:
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            made = await client.call_tool("create_chemical_synthesis", {
                "label": "S1", "chemical_output": {"label": "cage"}})
            step = await client.call_tool("create_add", {
                "chemical_synthesis": "S1", "order": 1,
                "added_chemical_input": {"label": "water"}})
            assert not made.is_error and not step.is_error
            before = canonical_nquads(store, PAPER)
            for tool, args, _ in PAIRS:
                admitted = jsonschema.Draft202012Validator(schemas[tool]).is_valid(args)
                result = await client.call_tool(tool, args)
                outcomes.append((admitted, result.content[0].text))
                assert not result.is_error or json.loads(result.content[0].text)["code"] in (
                    "datatype", "enum_value", "unknown_argument"), result.content[0].text
                assert (not result.is_error) == admitted, (tool, args, result.content[0].text)
            assert canonical_nquads(store, PAPER) == before  # dry runs and refusals only

    anyio.run(main)
    assert len(outcomes) == len(PAIRS)
    assert [a for a, _ in outcomes] == [expected for *_, expected in PAIRS]


def test_fixed_individuals_by_the_names_the_schema_lists() -> None:
    ir = load_ir([DOPING])
    schema = compile_tools(ir).get("create_doped_material").input_schema
    assert "SolGel" in schema["properties"]["doping_method"]["items"]["enum"]
    engine = Instantiator(ir, EmbeddedStore())
    base = {"label": "x", "host": {"label": "h"}, "dopant": [{"label": "d"}], "dry_run": True}
    engine.call("create_doped_material", "d1", {**base, "doping_method": ["SolGel"]})
    with pytest.raises(Rejected) as err:
        engine.call("create_doped_material", "d1", {**base, "doping_method": ["solgel"]})
    assert err.value.feedback.code == "enum_value" and "SolGel" in err.value.feedback.allowed


def test_every_recorded_mop30_call_follows_the_published_schema() -> None:
    surface = compile_tools(IR)
    validators = {t.name: jsonschema.Draft202012Validator(t.input_schema)
                  for t in surface.tools}
    calls = [json.loads(line) for path in sorted(TRACES.glob("*.jsonl"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(calls) >= 1700
    bad = [(c["tool"], e.message) for c in calls
           for e in validators[c["tool"]].iter_errors(c["arguments"])]
    assert bad == []


def test_describe_tool_gives_the_full_guidance_on_demand() -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(build_server(IR, EmbeddedStore(), paper_id=PAPER)) as client:
            seen["ok"] = await client.call_tool("describe_tool", {"tool": HEAT})
            seen["bad"] = await client.call_tool("describe_tool", {"tool": "create_heat"})
            seen["one"] = await client.call_tool("describe_tool", {
                "tool": "create_add", "argument": "added_chemical_input"})
            seen["no arg"] = await client.call_tool("describe_tool", {
                "tool": "create_add", "argument": "added_chemical"})

    anyio.run(main)
    rows = seen["ok"].structured_content["data"]
    comment = IR.classes[IR.prefixes["ontosyn"] + "HeatChill"].comment
    assert rows[0]["tool"] == HEAT and rows[0]["guidance"] == " ".join(comment.split())
    env = next(r for r in rows[1:] if r["argument"] == "vessel_environment")
    assert "Vacuum" in env["allowed"] and env["property"] == "ontosyn:hasVesselEnvironment"
    bad = json.loads(seen["bad"].content[0].text)
    assert seen["bad"].is_error and bad["code"] == "enum_value" and HEAT in bad["allowed"]
    one = seen["one"].structured_content["data"]  # the argument and the fields inside it
    assert one[0]["argument"] == "added_chemical_input"
    assert {"added_chemical_input.amount", "added_chemical_input.purity"} <= {
        r["argument"] for r in one}
    assert "…" not in one[0]["guidance"]
    missing = json.loads(seen["no arg"].content[0].text)
    assert missing["code"] == "enum_value" and "added_chemical_input" in missing["allowed"]


def _documented_codes() -> set[str]:
    table = DOCS.read_text(encoding="utf-8").split("## Feedback envelope and codes")[1]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE))


class _BrokenStore(EmbeddedStore):
    def write(self, *args: Any, **kwargs: Any) -> None:
        from kgctl.errors import StoreError

        raise StoreError("disk full")


# a call that provokes each documented code: (code, tool, arguments)
TRIGGERS: list[tuple[str, str, Any]] = [
    ("unknown_argument", HEAT, _heat(temprature="1 K")),
    ("required_missing", "create_add", {"chemical_synthesis": "S1", "order": 2}),
    ("max_one", HEAT, _heat(step_duration=["1 h", "2 h"])),
    ("datatype", HEAT, _heat(vacuum="yes")),
    ("range", HEAT, _heat(step_duration="-2 h")),
    ("enum_value", HEAT, _heat(vessel_environment="Helium")),
    ("unit_unknown", HEAT, _heat(target_temperature="100 furlong")),
    ("unit_incompatible", HEAT, _heat(target_temperature="100 kg")),
    ("type_mismatch", HEAT, lambda s: _heat(chemical_synthesis=s["step"])),
    ("foreign_iri", HEAT, lambda s: _heat(chemical_synthesis=s["other"])),
    ("not_found", HEAT, _heat(chemical_synthesis="S7")),
    ("ambiguous", HEAT, _heat(chemical_synthesis="twin")),
    ("order_duplicate", HEAT, {**_heat(), "order": 1}),
    ("order_gap", HEAT, {**_heat(), "order": 5}),
    ("duplicate", "link", lambda s: {"subject": "S1", "property": "ontosyn:hasSynthesisStep",
                                     "object": s["step"]}),
    ("too_large", HEAT, _heat(label="x" * 5000)),
    ("invalid_text", HEAT, _heat(label="heat\x00ing")),
    ("invalid_iri", HEAT, _heat(chemical_synthesis="<https://x> } ; DROP ALL ; <y>")),
    ("unknown_tool", "create_nothing", {}),
    ("no_paper", HEAT, _heat()),
    ("store_error", "create_chemical_synthesis", {"label": "S1",
                                                   "chemical_output": {"label": "cage"}}),
]


def test_every_documented_code_is_reachable() -> None:
    """Each code of the docs' table comes back from a real call (engine for an unknown tool,
    which the MCP SDK answers itself; MCP sessions for the rest)."""
    # `cardinality` needs an OWL cardinality axiom, which the bundled T-Boxes do not state:
    # tests/test_ontology_corpus.py provokes it through Pizza, PROV-O and OWL-Time sessions
    assert {code for code, *_ in TRIGGERS} | {"cardinality"} == _documented_codes()
    store = _BrokenStore()
    got: dict[str, str] = {}
    engine = Instantiator(IR, EmbeddedStore())
    with pytest.raises(Rejected) as err:
        engine.call("create_nothing", PAPER, {})
    got["unknown_tool"] = err.value.feedback.code

    async def main() -> None:
        async with Client(build_server(IR, EmbeddedStore())) as client:
            unbound = await client.call_tool(HEAT, _heat())
            got["no_paper"] = json.loads(unbound.content[0].text)["code"]
        working = EmbeddedStore()
        async with Client(build_server(IR, working, paper_id="other")) as client:
            other = await client.call_tool("create_chemical_synthesis", {
                "label": "elsewhere", "chemical_output": {"label": "o"}})
            await client.call_tool("select_paper", {"paper_id": PAPER})
            setup = {"other": other.structured_content["iris"][0]}
            for label in ("S1", "twin", "twin"):
                made = await client.call_tool("create_chemical_synthesis", {
                    "label": label, "chemical_output": {"label": f"{label} cage"}})
                assert not made.is_error
            step = await client.call_tool("create_add", {
                "chemical_synthesis": "S1", "order": 1,
                "added_chemical_input": {"label": "water"}})
            setup["step"] = step.structured_content["iris"][0]
            for code, tool, args in TRIGGERS:
                if code in got or code == "store_error":
                    continue
                result = await client.call_tool(tool, args(setup) if callable(args) else args)
                assert result.is_error, code
                got[code] = json.loads(result.content[0].text)["code"]
        # a store that cannot write: a valid call comes back with the envelope
        async with Client(build_server(IR, store, paper_id=PAPER)) as client:
            tool, args = next((t, a) for c, t, a in TRIGGERS if c == "store_error")
            failed = await client.call_tool(tool, args)
            assert failed.is_error
            got["store_error"] = json.loads(failed.content[0].text)["code"]
    assert list(store.triples(PAPER)) == []

    anyio.run(main)
    assert got == {code: code for code, *_ in TRIGGERS}


def test_without_feedback_a_misshapen_value_is_written_as_given() -> None:
    engine = Instantiator(IR, EmbeddedStore(), feedback=False)
    engine.call("create_chemical_synthesis", PAPER, {"label": "S1",
                                                     "chemical_output": {"label": "cage"}})
    made = engine.call(HEAT, PAPER, {"chemical_synthesis": "S1", "order": 1,
                                     "uses_equipment": "oven", "vacuum": "yes"})
    facts = {(r["property"], r["value"]) for r in engine.call(
        "describe_instance", PAPER, {"entity": made.iris[0]}).data[1:]}
    assert ("ontosyn:hasVacuum", "yes") in facts
    assert any(p == "ontosyn:usesEquipment" for p, _ in facts)
