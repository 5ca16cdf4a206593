"""What `kgctl ground` shows a person: decisions as a table with names and species labels,
candidates with their method, agreement and score, and no registry code as a species name."""

from __future__ import annotations

from click.testing import CliRunner
from grounding_helpers import build_small_reference
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.cli import cli
from kgctl.store import open_store

ONTO = "https://www.theworldavatar.com/kg/OntoSyn/"


def test_dry_run_and_lookup_are_tables_with_names(tmp_path):
    reference = build_small_reference(tmp_path / "species")
    store = open_store(path=tmp_path / "kg")
    chem = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/dmf")
    store.write("p1", insert=[
        Triple(chem, NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
               NamedNode(ONTO + "ChemicalInput")),
        Triple(chem, NamedNode("http://www.w3.org/2000/01/rdf-schema#label"), Literal("DMF"))])
    store.close()
    base = ["ground", "--reference", str(reference), "--cache-dir", str(tmp_path / "c")]
    runner = CliRunner()
    dry = runner.invoke(cli, [*base, "--store", str(tmp_path / "kg"), "--all", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    header, row = dry.stdout.splitlines()[:2]
    assert header.split() == ["paper", "name", "reference", "species", "method", "score",
                              "state"]
    assert row.split()[:3] == ["p1", "DMF", "n,n-dimethylformamide"] and "dry run" in row
    looked = runner.invoke(cli, [*base, "lookup", "1,4-dichlorbenzene", "-k", "3"])
    lines = looked.stdout.splitlines()
    assert lines[0].startswith("1,4-dichlorbenzene: no match")
    assert lines[1].split()[:4] == ["score", "method", "agrees", "species"]
    assert [line.split()[2] for line in lines[2:5]] == ["yes", "no", "no"]


def test_a_registry_code_is_never_the_species_name():
    from kgctl.chemistry.reference import parse_row

    line = ("71586933\t10031-48-8\tCu3H6O11P2\t434.6\tO\tInChI=1S/x\tIVAIWXUKIPQQPY-UHFFFAOYSA-H\t"
            "tricopper;diphosphate;trihydrate\tunii-ah2w0vv8ax\tcopper(ii) phosphate trihydrate")
    row = parse_row(line)
    assert row.label == "copper(ii) phosphate trihydrate"
    assert "unii-ah2w0vv8ax" in row.synonyms
