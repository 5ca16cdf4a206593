"""Minting through `kgctl ground --structures --mint`: only with agreeing evidence, into the
reference store's own graph with provenance, idempotent, kept when the reference is rebuilt."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from pyoxigraph import Literal, NamedNode, Store, Triple

from kgctl.cli import cli

pytest.importorskip("rdkit", reason="RDKit is not installed (pip install 'kgctl[chem]')")
pytest.importorskip("py2opsin", reason="py2opsin is not installed (pip install 'kgctl[chem]')")
if shutil.which("java") is None:
    pytest.skip("Java is not installed (OPSIN needs it)", allow_module_level=True)

from grounding_helpers import build_small_reference, iri, slice_rows  # noqa: E402

from kgctl.chemistry.mint import minted_iri  # noqa: E402
from kgctl.chemistry.reference import MINTED_GRAPH, build_reference  # noqa: E402
from kgctl.store import open_store  # noqa: E402

ONTO = "https://www.theworldavatar.com/kg/OntoSyn/"
PAPER = "https://w3id.org/kgctl/paper/p1/ChemicalInput/"
KGREF = "https://w3id.org/kgctl/reference/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
ALT = NamedNode(ONTO + "hasAlternativeNames")
FORMULA = NamedNode(ONTO + "hasChemicalFormula")
SAME_AS = NamedNode("http://www.w3.org/2002/07/owl#sameAs")
EDB = "ARBAMECCCQZCSR-UHFFFAOYSA-N"  # 4,4'-(ethyne-1,2-diyl)dibenzoic acid
MIA = "POSMIIJADZKUPL-UHFFFAOYSA-N"  # 5-methoxyisophthalic acid
# entity -> (label, alternative names, stated formula)
CHEMICALS = {
    "edb": ("4,4'-(ethyne-1,2-diyl)dibenzoic acid", None, "C16H10O4"),  # the formula agrees
    "mia": ("5-methoxyisophthalic acid", "5-methoxy-1,3-benzenedicarboxylic acid", None),  # 2 names
    "eia": ("5-ethoxyisophthalic acid", None, None),  # one name: no evidence
    "wrong": ("4,4'-(ethane-1,2-diyl)dibenzoic acid", None, "C16H10O4"),  # formula disagrees
    "tpa": ("4-(hydroxycarbonyl)benzoic acid", None, None),  # in the reference: structure tier
}


def paper_store(path):
    store = open_store(path=path)
    triples = []
    for key, (label, alternative, formula) in CHEMICALS.items():
        chem = NamedNode(PAPER + key)
        triples += [Triple(chem, RDF_TYPE, NamedNode(ONTO + "ChemicalInput")),
                    Triple(chem, LABEL, Literal(label))]
        triples += [Triple(chem, ALT, Literal(alternative))] if alternative else []
        triples += [Triple(chem, FORMULA, Literal(formula))] if formula else []
    store.write("p1", insert=triples)
    store.close()


def minted_quads(reference):
    store = Store.read_only(str(reference))
    return set(store.quads_for_pattern(None, None, None, MINTED_GRAPH)), store


def test_mint_only_with_agreeing_evidence_with_provenance_and_idempotent(tmp_path):
    reference = build_small_reference(tmp_path / "species")
    paper_store(tmp_path / "kg")
    base = ["ground", "--reference", str(reference), "--cache-dir", str(tmp_path / "c"),
            "--store", str(tmp_path / "kg"), "--all", "--structures", "--mint", "--json"]
    runner = CliRunner()

    dry = runner.invoke(cli, [*base, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    planned = {d["entity"].rsplit("/", 1)[1]: d["match"] for d in json.loads(dry.stdout)}
    assert minted_quads(reference)[0] == set()  # a dry run writes nothing
    assert "2 species would be minted" in dry.stderr

    run = runner.invoke(cli, base)
    assert run.exit_code == 0, run.output
    decided = {d["entity"].rsplit("/", 1)[1]: d["match"] for d in json.loads(run.stdout)}
    assert decided == planned
    assert {k for k, m in decided.items() if m and m["method"] == "minted"} == {"edb", "mia"}
    assert decided["edb"]["iri"] == minted_iri(EDB) and decided["mia"]["iri"] == minted_iri(MIA)
    assert decided["eia"] is None and decided["wrong"] is None
    assert decided["tpa"]["method"] == "structure" and decided["tpa"]["iri"] == iri("100-21-0")
    assert "2 species newly minted" in run.stderr

    quads, store = minted_quads(reference)
    edb = NamedNode(minted_iri(EDB))
    assert not list(store.quads_for_pattern(edb, None, None, None))[0:0] and all(
        q.graph_name == MINTED_GRAPH for q in store.quads_for_pattern(edb, None, None, None))
    record = next(q.object for q in quads if q.subject == edb
                  and q.predicate.value.endswith("wasGeneratedBy"))
    facts = {q.predicate.value.rsplit("/", 1)[-1].rsplit("#", 1)[-1]: q.object.value
             for q in quads if q.subject == record}
    assert facts["used"] == PAPER + "edb" and facts["paper"] == "p1"
    assert facts["statedFormula"] == "C16H10O4" and "C16H10O4" in facts["evidence"]
    assert facts["fromName"] == CHEMICALS["edb"][0]
    assert facts["opsinVersion"].startswith("opsin") and facts["rdkitVersion"][:2] == "20"
    del store

    kg = open_store(path=tmp_path / "kg")
    assert Triple(NamedNode(PAPER + "edb"), SAME_AS, edb) in set(kg.triples("p1"))
    kg.close()

    again = runner.invoke(cli, base)  # the index is harvested again: the minted graph changed
    assert again.exit_code == 0, again.output
    assert "0 species newly minted" in again.stderr
    redecided = {d["entity"].rsplit("/", 1)[1]: d["match"] for d in json.loads(again.stdout)}
    assert redecided["edb"]["iri"] == minted_iri(EDB) and redecided["edb"]["method"] == "minted"
    assert minted_quads(reference)[0] == quads

    found = runner.invoke(cli, ["ground", "--reference", str(reference), "--cache-dir",
                                str(tmp_path / "c"), "lookup", CHEMICALS["mia"][1], "--json"])
    assert json.loads(found.stdout)[0]["match"]["iri"] == minted_iri(MIA)

    build_reference(reference, slice_rows())  # a rebuilt reference keeps its minted species
    assert minted_quads(reference)[0] == quads


def test_mint_needs_structures(tmp_path):
    paper_store(tmp_path / "kg")
    result = CliRunner().invoke(cli, ["ground", "--store", str(tmp_path / "kg"), "--all",
                                      "--mint"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("error: --mint needs")
