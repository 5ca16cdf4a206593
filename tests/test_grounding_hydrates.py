"""A hydrate of unstated water content grounds to its anhydrous parent by kg:hydrateOf, through
`kgctl ground`, and is never made the same as the parent."""

from __future__ import annotations

import json

from click.testing import CliRunner
from grounding_helpers import build_small_reference, iri
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.cli import cli
from kgctl.store import open_store

ONTO = "https://www.theworldavatar.com/kg/OntoSyn/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
HYDRATE_OF = NamedNode("https://w3id.org/kgctl/ns#hydrateOf")
SAME_AS = NamedNode("http://www.w3.org/2002/07/owl#sameAs")


def test_unknown_hydrate_links_to_its_parent(tmp_path):
    reference = build_small_reference(tmp_path / "species")
    hydrate = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/cucl2-x")
    known = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/nicl2-6")
    store = open_store(path=tmp_path / "kg")
    store.write("p1", insert=[
        Triple(hydrate, RDF_TYPE, NamedNode(ONTO + "ChemicalInput")),
        Triple(hydrate, LABEL, Literal("copper(II) chloride·xH2O")),
        Triple(known, RDF_TYPE, NamedNode(ONTO + "ChemicalInput")),
        Triple(known, LABEL, Literal("NiCl2·6H2O")),  # a stated hydrate is its own species
    ])
    store.close()
    result = CliRunner().invoke(cli, [
        "ground", "--reference", str(reference), "--cache-dir", str(tmp_path / "c"),
        "--store", str(tmp_path / "kg"), "--all", "--mode", "rewrite", "--json"])
    assert result.exit_code == 0, result.output
    decisions = {d["entity"]: d["match"] for d in json.loads(result.stdout)}
    assert decisions[hydrate.value]["method"] == "hydrate"
    assert decisions[hydrate.value]["iri"] == iri("7447-39-4")
    assert decisions[known.value]["iri"] == iri("7791-20-0")
    store = open_store(path=tmp_path / "kg")
    triples = set(store.triples("p1"))
    store.close()
    assert Triple(hydrate, HYDRATE_OF, NamedNode(iri("7447-39-4"))) in triples
    assert not any(t.subject == hydrate and t.predicate == SAME_AS for t in triples)
    assert Triple(hydrate, LABEL, Literal("copper(II) chloride·xH2O")) in triples  # not rewritten
