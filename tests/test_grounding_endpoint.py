"""Grounding through the public doors: CLI, live oxigraph server, paper store, MCP session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from grounding_helpers import DISTRACTORS, WANTED, build_small_reference, iri
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.cli import cli
from kgctl.errors import InputError
from kgctl.grounding.harvest import harvest_index, validate_spec
from kgctl.grounding.index import LabelIndex
from kgctl.grounding.matcher import Matcher
from kgctl.grounding.server import start_server, stop_server
from kgctl.grounding.sources import EmbeddedSource, EndpointSource
from kgctl.grounding.spec import LabelField, Thresholds, load_spec

CHEMISTRY = "kgctl.chemistry.naming:NAMING"  # the mop30 pack's naming hook


def chemistry_index(rows):
    return LabelIndex.build(rows, naming=CHEMISTRY)


SPEC = load_spec("species")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return build_small_reference(tmp_path_factory.mktemp("ref") / "species")


@pytest.fixture(scope="module")
def endpoint(reference):
    process, url = start_server(reference)
    yield url
    stop_server(process)


def _state(index: LabelIndex) -> dict:
    s = index.state()
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in s.items()}


def test_endpoint_and_embedded_harvest_give_the_identical_index(reference, endpoint, tmp_path):
    over_http = harvest_index(EndpointSource(endpoint), SPEC, cache_dir=tmp_path / "a")
    embedded = harvest_index(EmbeddedSource(reference), SPEC, cache_dir=tmp_path / "b")
    assert over_http.summary()["entities"] == DISTRACTORS + len(WANTED)
    assert over_http.summary()["labels"] > 3000
    assert _state(over_http) == _state(embedded)


def test_cli_lookup_over_http_and_last_good_cache(reference, tmp_path):
    process, url = start_server(reference)
    cache = str(tmp_path / "cache")
    runner = CliRunner()
    try:
        result = runner.invoke(cli, ["ground", "--reference-endpoint", url, "--cache-dir", cache,
                                     "lookup", "DMF", "Ethanol", "copper (II) chloride",
                                     "zzzz qqqq", "--json"])
    finally:
        stop_server(process)
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert [r["match"]["iri"] if r["match"] else None for r in found] == [
        iri("68-12-2"), iri("64-17-5"), iri("7447-39-4"), None]
    assert found[0]["match"]["method"] == "abbreviation"
    assert len(found[1]["candidates"]) >= 2
    # the server is gone: a refresh fails with one line, the last good cache still answers
    failed = runner.invoke(cli, ["ground", "--reference-endpoint", url, "--cache-dir", cache,
                                 "--refresh", "lookup", "ethanol"])
    assert failed.exit_code == 2 and "unreachable" in failed.output
    assert "Traceback" not in failed.output
    kept = runner.invoke(cli, ["ground", "--reference-endpoint", url, "--cache-dir", cache,
                               "lookup", "ethanol", "--json"])
    assert kept.exit_code == 0, kept.output
    assert json.loads(kept.stdout)[0]["match"]["iri"] == iri("64-17-5")


@pytest.mark.parametrize("name, expected", [
    ("1,2-dichlorobenzene", "95-50-1"), ("1,3-dichlorobenzene", "541-73-1"),
    ("1,2-Dichloro-benzene", "95-50-1"), ("copper(I) chloride", "7758-89-6"),
    ("Copper(II) chloride", "7447-39-4"), ("copper(2+) chloride", "7447-39-4"),
    # the curated name beats another species' computed IUPAC name "methanol"
    ("methanol", "67-56-1"), ("MeOH", "67-56-1"),
    # a formula in Hill order over the whole hydrate; an inverted (CAS index) name
    ("NiCl2·6H2O", "7791-20-0"), ("Benzene, 1,3-dichloro-", "541-73-1"),
])
def test_isomers_and_oxidation_states_stay_distinct(reference, tmp_path, name, expected):
    matcher = Matcher(harvest_index(EmbeddedSource(reference), SPEC, cache_dir=tmp_path),
                      SPEC.thresholds)
    assert matcher.lookup(name).match.iri == iri(expected)


def test_fuzzy_never_merges_cis_trans_or_locants():
    index = chemistry_index([("ex:cis", "label:0", "cis-1,2-dichloroethene"),
                              ("ex:12", "label:0", "1,2-dichlorobenzene")])
    matcher = Matcher(index, Thresholds(fuzzy_score=80, margin=0, candidates=5))
    assert matcher.lookup("trans-1,2-dichloroethene").match is None
    assert matcher.lookup("1,4-dichlorobenzene").match is None
    assert matcher.lookup("cis-1,2-dichlorethene").match.iri == "ex:cis"


def test_bad_input_gives_one_clear_error(reference, tmp_path):
    runner = CliRunner()
    base = ["ground", "--reference", str(reference), "--cache-dir", str(tmp_path), "lookup"]
    for name, message in [("x" * 10_000, "longer than"), ("eth\x00anol", "control")]:
        result = runner.invoke(cli, [*base, name])
        assert result.exit_code == 2 and message in result.output
        assert "Traceback" not in result.output
    dead = runner.invoke(cli, ["ground", "--reference-endpoint", "http://127.0.0.1:9/query",
                               "--cache-dir", str(tmp_path / "x"), "lookup", "ethanol"])
    assert dead.exit_code == 2 and "unreachable" in dead.output
    source = EmbeddedSource(reference)
    unknown = SPEC.model_copy(update={"labels": (LabelField(path=("http://ex.org/nope",)),)})
    with pytest.raises(InputError, match="nope"):
        validate_spec(source, unknown)
    with pytest.raises(InputError, match="no instances"):
        validate_spec(source, SPEC.model_copy(update={"target_class": "http://ex.org/C"}))


def test_ground_papers_sameas_idempotent_with_provenance(reference, tmp_path):
    from kgctl.store import open_store

    onto = "https://www.theworldavatar.com/kg/OntoSyn/"
    store_path = tmp_path / "kg"
    store = open_store(path=store_path)
    chem = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/dmf")
    other = NamedNode("https://w3id.org/kgctl/paper/p1/ChemicalInput/unobtainium")
    rdf_type = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    label = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    store.write("p1", insert=[
        Triple(chem, rdf_type, NamedNode(onto + "ChemicalInput")),
        Triple(chem, label, Literal("DMF")),
        Triple(chem, NamedNode(onto + "hasAlternativeNames"),
               Literal("N,N-dimethylformamide; dimethylformamide")),
        Triple(other, rdf_type, NamedNode(onto + "ChemicalInput")),
        Triple(other, label, Literal("unobtainium blue")),
    ])
    before = len(list(store.triples("p1")))
    store.close()
    base = ["ground", "--reference", str(reference), "--cache-dir", str(tmp_path / "c"),
            "--store", str(store_path), "--all", "--json"]
    runner = CliRunner()
    dry = runner.invoke(cli, [*base, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    decisions = {d["entity"]: d for d in json.loads(dry.stdout)}
    assert decisions[chem.value]["match"]["iri"] == iri("68-12-2")
    assert decisions[other.value]["match"] is None
    first = runner.invoke(cli, base)
    second = runner.invoke(cli, base)
    assert [d["written"] for d in json.loads(first.stdout) if d["match"]] == [True]
    assert [d["written"] for d in json.loads(second.stdout) if d["match"]] == [False]
    store = open_store(path=store_path)
    triples = list(store.triples("p1"))
    assert len(triples) == before + 1
    assert Triple(chem, NamedNode("http://www.w3.org/2002/07/owl#sameAs"),
                  NamedNode(iri("68-12-2"))) in triples
    trace = store.trace("p1")
    assert trace[-1].tool == "ground" and trace[-1].arguments["candidates"]
    store.close()
