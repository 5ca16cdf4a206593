"""Chemistry: OPSIN in one JVM, names voting, linker and metal building units, the MCP server
over stdio and the CLI. Skips with a reason where Java or RDKit is missing."""

from __future__ import annotations

import json
import shutil
import sys

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from kgctl.assets import asset_dir
from kgctl.cli import cli

pytest.importorskip("rdkit", reason="RDKit is not installed (pip install 'kgctl[chem]')")
pytest.importorskip("py2opsin", reason="py2opsin is not installed (pip install 'kgctl[chem]')")
if shutil.which("java") is None:
    pytest.skip("Java is not installed (OPSIN needs it)", allow_module_level=True)

from kgctl.chemistry.cbu import derive_units  # noqa: E402
from kgctl.chemistry.linker import derive_linker  # noqa: E402
from kgctl.chemistry.names import resolve  # noqa: E402
from kgctl.chemistry.opsin import Opsin  # noqa: E402
from kgctl.chemistry.sbu import derive_sbu, families  # noqa: E402


@pytest.fixture(scope="module")
def opsin():
    with Opsin() as running:
        yield running


def test_one_process_answers_many_names_and_refuses_what_is_no_name(opsin):
    assert opsin.smiles("benzene") == "C1=CC=CC=C1"
    first = opsin._process
    assert opsin.smiles("trimesic\nacid") is None or opsin._process is first
    assert opsin.smiles("x" * 10_000) is None and opsin.smiles("  ") is None
    assert opsin.smiles("ethanol") == "C(C)O" and opsin._process is first


def test_names_vote_and_primed_locants_break_ties(opsin):
    result = resolve(opsin, ["2,2-bipyridine-5,5-dicarboxylic acid",
                             "2,2'-bipyridine-5,5'-dicarboxylic acid", "H2bpydc"])
    assert result.structure.smiles == "O=C(O)c1ccc(-c2ccc(C(=O)O)cn2)nc1"  # primes restored
    assert len(result.agreeing) == 2 and {p.parsed for p in result.parsed} == {
        "2,2'-bipyridine-5,5'-dicarboxylic acid"}
    tie = resolve(opsin, ["benzoic acid", "2,2'-bithiophene"])  # one vote each
    assert tie.agreeing == ("2,2'-bithiophene",)
    both = resolve(opsin, ["H2BDC", "1,4-benzenedicarboxylic acid"])
    assert both.structure.formula == "C8H6O4" and len(both.agreeing) == 2
    assert resolve(opsin, ["not a chemical"]).structure is None


LINKERS = [  # SMILES, unit, composition
    ("OC(=O)c1cc(cc(c1)C(O)=O)C(O)=O", "[(C6H3)(CO2)3]", "C9H3O6"),
    ("[Na+].[O-]C(=O)c1cc(cc(c1)C([O-])=O)C([O-])=O.[Na+].[Na+]", "[(C6H3)(CO2)3]", "C9H3O6"),
    ("OS(=O)(=O)c1ccc(cc1)S(O)(=O)=O", "[(C6H4)(SO3)2]", "C6H4O6S2"),
    ("OP(O)(=O)c1ccccc1", "[(C6H5)(PO3)]", "C6H5O3P"),
    ("OC(=O)c1ccc(cc1)C#Cc1ccc(cc1)C(O)=O", "[(C14H8)(CO2)2]", "C16H8O4"),
]


@pytest.mark.parametrize(("smiles", "unit", "composition"), LINKERS)
def test_linker_units(smiles, unit, composition):
    derived = derive_linker(smiles)
    assert (derived.formula, derived.composition) == (unit, composition)


def test_no_linker_without_binding_group_or_with_a_metal():
    assert derive_linker("c1ccccc1") is None
    complexed = "Cl[Pd]1(Cl)n2ccc(C(=O)O)cc2-c2cc(C(=O)O)ccn21"  # a metal bound to the core
    assert derive_linker(complexed) is None
    salt = derive_linker("[Cu+2].[O-]C(=O)c1ccccc1.[O-]C(=O)c1ccccc1")  # an ion beside it
    assert salt.formula == "[(C6H5)(CO2)]"


def test_sbu_table_names_its_sources_and_benchmark_papers():
    papers = {p.stem for p in (asset_dir("domains") / "mop30" / "benchmark" / "cbu").glob("*.json")}
    assert len(families()) >= 5
    for family in families():
        assert family.source and set(family.seen_in) <= papers, family.id


LITERATURE = [  # outside MOP-30: metals and precursors its papers do not use
    (["rhodium(II) acetate"], ["terephthalic acid"], "[Rh2]"),  # Rh2(O2C)4 paddle-wheel
    (["zinc nitrate hexahydrate"], ["1,3,5-benzenetricarboxylic acid"], "[Zn2]"),
    (["copper(II) nitrate trihydrate"], ["trimesic acid"], "[Cu2]"),  # HKUST-1's Cu2(O2C)4
]


@pytest.mark.parametrize(("metal", "linker", "unit"), LITERATURE)
def test_paddle_wheel_family_outside_the_benchmark(opsin, metal, linker, unit):
    assert derive_units(opsin, metal=metal, linker=linker).metal.unit == unit


def test_sbu_needs_a_matching_partner():
    assert derive_sbu(["VOSO4"], partner="carboxylate").unit == "[V6O6(OCH3)9(SO4)]"
    assert derive_sbu(["VOSO4"], partner=None) is None
    assert derive_sbu(["nickel(II) nitrate"], partner="pyrogallolarene").unit == "[Ni3]"


def test_cli_parse_and_cbu():
    runner = CliRunner()
    parsed = runner.invoke(cli, ["chem", "parse", "H2BDC", "--json"])
    assert parsed.exit_code == 0 and json.loads(parsed.output)["structure"]["formula"] == "C8H6O4"
    units = runner.invoke(cli, ["chem", "cbu", "--metal", "Cp2ZrCl2", "--linker",
                                "4,4'-biphenyldicarboxylic acid", "--json"])
    data = json.loads(units.output)
    assert data["metal"]["unit"] == "[Zr3O(OH)3(C5H5)3]"
    assert data["linker"]["composition"] == "C14H8O4"
    assert runner.invoke(cli, ["chem", "parse"]).exit_code == 2


def test_mcp_server_over_stdio():
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from kgctl.cli import main; main()", "chem", "mcp"])

    async def main() -> tuple:
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            units = await client.call_tool("derive_building_units", {
                "metal_names": ["copper(II) acetate"], "linker_names": ["isophthalic acid"]})
            smiles = await client.call_tool("describe_structure", {"smiles": "CCO"})
            return tools, units, smiles

    tools, units, smiles = anyio.run(main)
    assert set(tools) == {"parse_names", "describe_structure", "derive_linker_unit",
                          "derive_building_units"}
    assert all(t.annotations.read_only_hint for t in tools.values())
    assert units.structured_content["metal"]["unit"] == "[Cu2]"
    assert units.structured_content["linker"]["formula"] == "[(C6H4)(CO2)2]"
    assert smiles.structured_content["inchikey"] == "LFQSCWFLJHTTHZ-UHFFFAOYSA-N"


def test_ground_with_structures_finds_a_name_no_label_has(tmp_path):
    from grounding_helpers import build_small_reference, iri
    from pyoxigraph import Literal, NamedNode, Triple

    from kgctl.store import open_store

    reference = build_small_reference(tmp_path / "species")
    onto = "https://www.theworldavatar.com/kg/OntoSyn/"
    rdf_type = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    label = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    chem = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/tpa")
    formula = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/formula")
    store = open_store(path=tmp_path / "kg")
    store.write("p1", insert=[
        Triple(chem, rdf_type, NamedNode(onto + "ChemicalInput")),
        Triple(chem, label, Literal("4-(hydroxycarbonyl)benzoic acid")),  # no reference label
        Triple(formula, rdf_type, NamedNode(onto + "ChemicalInput")),
        Triple(formula, label, Literal("C8H6O4")),  # a carbon formula alone never decides
    ])
    store.close()
    base = ["ground", "--reference", str(reference), "--cache-dir", str(tmp_path / "c"),
            "--store", str(tmp_path / "kg"), "--all", "--dry-run", "--json"]
    runner = CliRunner()
    plain = {d["entity"]: d for d in json.loads(runner.invoke(cli, base).stdout)}
    found = runner.invoke(cli, [*base, "--structures"])
    assert found.exit_code == 0, found.output
    structured = {d["entity"]: d for d in json.loads(found.stdout)}
    assert plain[chem.value]["match"] is None
    assert structured[chem.value]["match"]["iri"] == iri("100-21-0")
    assert structured[chem.value]["match"]["method"] == "structure"
    assert plain[formula.value]["match"] is None and structured[formula.value]["match"] is None
