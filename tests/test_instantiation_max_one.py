"""Max-one on label-identified nodes through a real MCP session: the same value again is a
no-op, a different value is a `max_one` finding and nothing is written."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import Client

from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir
from kgctl.store import EmbeddedStore, canonical_nquads

PAPER = "p1"
OS = "http://www.theworldavatar.com/ontology/ontospecies/OntoSpecies.owl#"
SOLVENT_NAMES = f"SELECT ?name WHERE {{ ?s a <{OS}Solvent> ; <{OS}hasSolventName> ?name }}"
VESSEL_TYPES = ("SELECT ?t WHERE { ?v a <https://www.theworldavatar.com/kg/OntoSyn/Vessel> ; "
                "<https://www.theworldavatar.com/kg/OntoSyn/hasVesselType> ?t }")


def _heat(order: int, vessel_type: str) -> dict[str, Any]:
    return {"chemical_synthesis": "S1", "order": order, "label": f"heat {order}",
            "vessel": {"label": "autoclave", "vessel_type": vessel_type}}


def _nmr(solvent_name: str) -> dict[str, Any]:
    return {"subject": "cage", "shifts": "7.2 (s)",
            "uses_solvent": {"label": "DMSO-d6", "solvent_name": solvent_name}}


def _cbus(subject: str, label: str, *formulas: str) -> dict[str, Any]:
    return {"subject": subject, "label": f"MOP of {subject}", "chemical_building_unit": [
        {"label": label, "cbu_formula": f} for f in formulas]}


# (name, tool, arguments, accepted, rejected field)
CALLS: list[tuple[str, str, dict[str, Any], bool, str | None]] = [
    ("vessel first described", "create_heat_chill", _heat(1, "Teflon autoclave"), True, None),
    ("vessel again, same type", "create_heat_chill", _heat(2, "Teflon autoclave"), True, None),
    ("vessel again, other type", "create_heat_chill", _heat(3, "glass vial"), False,
     "vessel.vessel_type"),
    ("solvent first described", "add_hnmr_data", _nmr("DMSO-d6"), True, None),
    ("solvent again, same name", "add_hnmr_data", _nmr("DMSO-d6"), True, None),
    ("solvent again, other name", "add_hnmr_data", _nmr("CDCl3"), False,
     "uses_solvent.solvent_name"),
    ("one CBU twice in a call, same formula", "add_is_represented_by",
     _cbus("cage", "cluster", "Cu2", "Cu2"), True, None),
]


def test_same_value_is_accepted_and_a_different_one_refused() -> None:
    store = EmbeddedStore()
    outcomes: list[tuple[bool, dict[str, Any], bool]] = []

    async def main() -> None:
        async with Client(build_server(default_ir(), store, paper_id=PAPER)) as client:
            for synthesis, output in (("S1", "cage"), ("S2", "cage 2")):
                made = await client.call_tool("create_chemical_synthesis", {
                    "label": synthesis, "chemical_output": {"label": output}})
                assert not made.is_error, made.content[0].text
            for _, tool, args, _, _ in CALLS:
                before = canonical_nquads(store, PAPER)
                result = await client.call_tool(tool, args)
                outcomes.append((result.is_error, json.loads(result.content[0].text),
                                 canonical_nquads(store, PAPER) != before))

    anyio.run(main)
    assert len(outcomes) == len(CALLS)
    for (name, _, _, accepted, field), (is_error, payload, changed) in zip(
            CALLS, outcomes, strict=False):
        assert is_error is not accepted, (name, payload)
        if accepted:
            assert changed, name  # the step or the data node itself is new
        else:
            assert not changed, name
            assert payload["code"] == "max_one" and payload["field"] == field, (name, payload)
    assert [r["t"].value for r in store.query(VESSEL_TYPES, paper_id=PAPER)] != []
    assert len(list(store.query(VESSEL_TYPES, paper_id=PAPER))) == 1
    assert [r["name"].value for r in store.query(SOLVENT_NAMES, paper_id=PAPER)] == ["DMSO-d6"]
