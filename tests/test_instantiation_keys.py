"""Classes with a natural key (the bundled CBU, keyed by its formula) through a real MCP
session: found-or-created and minted by the normalised key (case kept: "[CU2]" is not
"[Cu2]"), label optional, names added."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import Client

from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir
from kgctl.store import EmbeddedStore, canonical_nquads
from kgctl.store.iris import mint_iri

PAPER = "p1"
MOPS = "https://www.theworldavatar.com/kg/ontomops/"
CBU = MOPS + "ChemicalBuildingUnit"
CBUS = (f"SELECT ?c ?f ?l WHERE {{ ?c a <{CBU}> ; <{MOPS}hasCBUFormula> ?f . "
        "OPTIONAL { ?c <http://www.w3.org/2000/01/rdf-schema#label> ?l } }")


def _mop(subject: str, *units: Any) -> dict[str, Any]:
    return {"subject": subject, "label": f"MOP of {subject}",
            "chemical_building_unit": list(units)}


def _cbus(store: EmbeddedStore) -> dict[str, tuple[set[str], set[str]]]:
    out: dict[str, tuple[set[str], set[str]]] = {}
    for row in store.query(CBUS, paper_id=PAPER):
        formulas, labels = out.setdefault(row["c"].value, (set(), set()))
        formulas.add(row["f"].value)
        if row["l"] is not None:
            labels.add(row["l"].value)
    return out


async def _call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, dict]:
    result = await client.call_tool(tool, args)
    return result.is_error, json.loads(result.content[0].text)


def test_keyed_class_is_found_by_key_with_optional_label() -> None:
    store = EmbeddedStore()
    seen: dict[str, Any] = {}

    async def session(*, first: bool) -> None:
        async with Client(build_server(default_ir(), store, paper_id=PAPER)) as client:
            if first:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                schema = tools["add_is_represented_by"].input_schema
                seen["schema"] = schema
                for n in range(1, 5):
                    error, _ = await _call(client, "create_chemical_synthesis", {
                        "label": f"S{n}", "chemical_output": {"label": f"cage {n}"}})
                    assert not error
                seen["unnamed"] = await _call(client, "add_is_represented_by",
                                              _mop("cage 1", {"cbu_formula": "[Cu2]"}))
                seen["again"] = await _call(client, "add_is_represented_by", _mop(
                    "cage 2", {"cbu_formula": " [Cu2] ", "label": "paddlewheel"},
                    "[(C6H4)(CO2)2]", {"cbu_formula": "[CU2]"}))
                seen["same name"] = await _call(client, "add_is_represented_by", _mop(
                    "cage 3", {"cbu_formula": "[Zr3O]", "label": "paddlewheel"}))
                before = canonical_nquads(store, PAPER)
                seen["no key"] = await _call(client, "add_is_represented_by",
                                             _mop("cage 4", {"label": "linker"}))
                zr = mint_iri(PAPER, CBU, "[Zr3O]", exact=True).value
                seen["taken key"] = await _call(client, "update_property", {
                    "entity": zr, "property": "ontomops:hasCBUFormula", "value": "[Cu2]"})
                seen["unchanged"] = canonical_nquads(store, PAPER) == before
            else:  # a new server loads the keys from the store
                seen["reloaded"] = await _call(client, "add_is_represented_by", _mop(
                    "cage 4", {"cbu_formula": "[Cu2]", "label": "Cu paddlewheel"}))

    anyio.run(lambda: session(first=True))
    anyio.run(lambda: session(first=False))

    item = seen["schema"]["properties"]["chemical_building_unit"]["items"]["anyOf"][1]
    assert item["required"] == ["cbu_formula"]
    cu2 = mint_iri(PAPER, CBU, "[Cu2]", exact=True).value
    assert seen["unnamed"] == (False, seen["unnamed"][1]) and cu2 in seen["unnamed"][1]["iris"]
    assert not seen["again"][0] and not seen["same name"][0] and not seen["reloaded"][0]
    error, envelope = seen["no key"]
    assert error and envelope["code"] == "required_missing"
    assert envelope["field"] == "chemical_building_unit[0].cbu_formula"
    error, envelope = seen["taken key"]
    assert error and envelope["code"] == "duplicate" and envelope["allowed"] == [cu2]
    assert seen["unchanged"]
    cbus = _cbus(store)
    assert len(cbus) == 4  # [Cu2] once (two spacings), [CU2] apart, the linker, [Zr3O]
    assert {"[CU2]"} in [f for f, _ in cbus.values()]
    assert cbus[cu2] == ({"[Cu2]"}, {"paddlewheel", "Cu paddlewheel"})
    named = sorted(c for c, (_, labels) in cbus.items() if "paddlewheel" in labels)
    assert len(named) == 2  # a shared name does not merge CBUs with different formulas
    linker = next(c for c, (f, _) in cbus.items() if f == {"[(C6H4)(CO2)2]"})
    assert cbus[linker][1] == set()  # a plain text is the key: no name invented
