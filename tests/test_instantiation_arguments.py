"""Arguments of two ontologies that share a local name are both writable through the tools."""

from __future__ import annotations

import anyio
from mcp import Client

from kgctl.instantiation.server import build_server
from kgctl.ontology import default_ir
from kgctl.store import EmbeddedStore

IR = default_ir()
ONTOSYN, OS = IR.prefixes["ontosyn"], IR.prefixes["ontospecies"]
FORMULAS = f"""SELECT ?syn ?species WHERE {{
  ?out a <{ONTOSYN}ChemicalOutput> ; <{ONTOSYN}hasChemicalFormula> ?syn ;
       <{OS}hasChemicalFormula>/<{OS}hasChemicalFormulaValue> ?species }}"""


def test_both_chemical_formulas_of_an_output_are_written() -> None:
    store = EmbeddedStore()

    async def main() -> None:
        async with Client(build_server(IR, store, paper_id="p1")) as client:
            made = await client.call_tool("create_chemical_synthesis", {
                "label": "S1", "chemical_output": {"label": "cage"}})
            gone = await client.call_tool("delete_entity", {"entity": "cage"})
            result = await client.call_tool("add_chemical_output", {
                "subject": "S1", "label": "cage", "ontosyn_chemical_formula": "C72H60Zr6",
                "ontospecies_chemical_formula": [{"label": "formula",
                                                  "chemical_formula_value": ["C72H60Zr6·DMF"]}]})
            for answer in (made, gone, result):
                assert not answer.is_error, answer.content[0].text

    anyio.run(main)
    rows = [(r["syn"].value, r["species"].value) for r in store.query(FORMULAS, paper_id="p1")]
    assert rows == [("C72H60Zr6", "C72H60Zr6·DMF")]
