"""The dedup job through the store interface: links across papers, never merges conflicting keys,
keeps paper graphs untouched, is idempotent and incremental, and honours review decisions."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.cli import cli
from kgctl.dedup.job import DEDUP_GRAPH, SAME_AS, read_review, run
from kgctl.dedup.spec import pack_specs
from kgctl.errors import InputError
from kgctl.store.embedded import EmbeddedStore
from kgctl.store.iris import mint_iri

SYN = "https://www.theworldavatar.com/kg/OntoSyn/"
MOPS = "https://www.theworldavatar.com/kg/ontomops/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
ALT = NamedNode(SYN + "hasAlternativeNames")
FORMULA = NamedNode(SYN + "hasChemicalFormula")
CCDC = NamedNode(MOPS + "hasCCDCNumber")


def add_chemical(store, paper, key, label, *, alt=None, formula=None, cls="ChemicalInput"):
    node = mint_iri(paper, SYN + cls, key)
    triples = [Triple(node, RDF_TYPE, NamedNode(SYN + cls)), Triple(node, LABEL, Literal(label))]
    if alt:
        triples.append(Triple(node, ALT, Literal(alt)))
    if formula:
        triples.append(Triple(node, FORMULA, Literal(formula)))
    store.write(paper, insert=triples)
    return node.value


def add_mop(store, paper, key, label, ccdc):
    node = mint_iri(paper, MOPS + "MetalOrganicPolyhedron", key)
    store.write(paper, insert=[Triple(node, RDF_TYPE, NamedNode(MOPS + "MetalOrganicPolyhedron")),
                               Triple(node, LABEL, Literal(label)),
                               Triple(node, CCDC, Literal(ccdc))])
    return node.value


def links(store) -> dict[str, str]:
    rows = store.query("SELECT ?m ?c WHERE { GRAPH ?g { ?m ?same ?c } }",
                       bindings={"g": DEDUP_GRAPH, "same": SAME_AS})
    return {r["m"].value: r["c"].value for r in rows}


def paper_quads(store) -> list[str]:
    return sorted(f"{p} {t}" for p in store.papers() for t in store.triples(p))


@pytest.fixture
def store():
    s = EmbeddedStore()
    add_chemical(s, "p1", "dmf", "DMF", alt="N,N-dimethylformamide", formula="C3H7NO")
    add_chemical(s, "p2", "dmf", "N, N-Dimethylformamide", formula="HCON(CH3)2")
    add_chemical(s, "p3", "solvent", "dimethylformamide; DMF")
    add_chemical(s, "p2", "ipa", "isophthalic acid", alt="1,3-benzenedicarboxylic acid",
                 formula="C8H6O4")
    add_chemical(s, "p3", "tpa", "terephthalic acid", alt="1,4-benzenedicarboxylic acid",
                 formula="C8H6O4")
    # a shared building-unit fragment "[Cu2]" is no evidence: salts stay apart
    add_chemical(s, "p1", "cu", "Cu(NO3)2·6H2O", alt="[Cu2]", formula="Cu(NO3)2·6H2O")
    add_chemical(s, "p3", "cu", "Cu(NO3)2·3H2O", alt="[Cu2]")
    return s


def test_shared_chemicals_end_in_one_cluster_and_papers_are_untouched(store):
    before = paper_quads(store)
    summaries = run(store, pack_specs(None))
    assert paper_quads(store) == before
    link = links(store)
    dmf = {link[mint_iri(p, SYN + "ChemicalInput", k).value]
           for p, k in (("p1", "dmf"), ("p2", "dmf"), ("p3", "solvent"))}
    assert len(dmf) == 1
    others = {link[mint_iri(p, SYN + "ChemicalInput", k).value]
              for p, k in (("p2", "ipa"), ("p3", "tpa"), ("p1", "cu"), ("p3", "cu"))}
    assert len(others) == 4 and not dmf & others  # isomers and hydrates stay apart
    chem = next(s for s in summaries if s.spec == "chemical")
    assert (chem.mentions, chem.clusters, chem.cross_paper_clusters) == (7, 5, 1)


def test_a_chain_of_names_never_joins_conflicting_identifiers():
    s = EmbeddedStore()
    tri = add_chemical(s, "p1", "cu", "copper nitrate", formula="Cu(NO3)2·3H2O")
    hexa = add_chemical(s, "p2", "cu", "copper nitrate", formula="Cu(NO3)2·6H2O")
    bare = add_chemical(s, "p3", "cu", "copper nitrate")  # the link in the chain
    run(s, pack_specs(None))
    link = links(s)
    assert link[tri] != link[hexa] and link[bare] in (link[tri], link[hexa])
    refused = list(s.query(
        "SELECT ?e WHERE { GRAPH ?g { ?d a ?t ; ?ev ?e } }",
        bindings={"g": NamedNode(DEDUP_GRAPH.value + "/provenance"),
                  "t": NamedNode("https://w3id.org/kgctl/ns#RefusedMerge"),
                  "ev": NamedNode("https://w3id.org/kgctl/ns#evidence")}))
    assert [r["e"].value for r in refused] == [
        "same name 'copper nitrate'; refused: formula: CuH6N2O9 vs CuH12N2O12"]


def test_mops_link_by_deposition_number_not_by_paper_local_names():
    s = EmbeddedStore()
    a = add_mop(s, "p1", "cage", "MOP-1", "CCDC 1000001")
    b = add_mop(s, "p2", "cage", "MOP-1", "1000002")  # same label, other deposit: other cage
    c = add_mop(s, "p3", "cage", "cuboctahedron A", "1000001")  # same deposit: same cage
    run(s, pack_specs(None))
    link = links(s)
    assert link[a] == link[c] != link[b]


def test_rerun_is_idempotent_and_a_new_paper_reuses_clusters(store):
    run(store, pack_specs(None))
    first = links(store)
    run(store, pack_specs(None))
    assert links(store) == first
    new = add_chemical(store, "p9", "dmf", "N,N-dimethyl formamide", formula="C3H7NO")
    run(store, pack_specs(None))
    after = links(store)
    assert after[new] == first[mint_iri("p1", SYN + "ChemicalInput", "dmf").value]
    assert {k: v for k, v in after.items() if k != new} == first


def test_review_file_decisions_are_applied_and_kept(store, tmp_path: Path):
    review = tmp_path / "review.csv"
    run(store, pack_specs(None), review_out=review)
    rows = list(csv.DictReader(review.open()))
    pair = next(r for r in rows if {"1,3" in r["evidence"], "1,4" in r["evidence"]} == {True})
    pair["decision"] = "reject"
    with review.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerow(pair)
    run(store, pack_specs(None), review_in=review, review_out=tmp_path / "again.csv")
    again = [r["evidence"] for r in csv.DictReader((tmp_path / "again.csv").open())]
    assert pair["evidence"] not in again  # a rejected pair is not asked again
    run(store, pack_specs(None), review_out=tmp_path / "third.csv")  # decision kept in the store
    third = csv.DictReader((tmp_path / "third.csv").open())
    assert pair["evidence"] not in [r["evidence"] for r in third]


def test_dry_run_writes_nothing_and_bad_input_is_one_clear_error(store, tmp_path: Path):
    run(store, pack_specs(None), dry_run=True)
    assert links(store) == {}
    with pytest.raises(InputError, match="no paper graphs"):
        run(EmbeddedStore(), pack_specs(None))
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n")
    with pytest.raises(InputError, match="row 2 needs the columns 'a' and 'b'"):
        read_review(bad)
    bad.write_text("a,b,decision\nurn:u,urn:v,maybe\n")
    with pytest.raises(InputError, match="'maybe' is not accept or reject"):
        read_review(bad)


def test_interrupted_job_keeps_the_previous_dedup_graph(store, monkeypatch):
    run(store, pack_specs(None))
    first = links(store)
    add_chemical(store, "p9", "x", "xylene")

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("kgctl.dedup.job.cluster", crash)
    with pytest.raises(KeyboardInterrupt):
        run(store, pack_specs(None))
    assert links(store) == first


def test_cli_reports_clusters_and_rejects_bad_input(tmp_path: Path):
    path = tmp_path / "store"
    s = EmbeddedStore(path)
    add_chemical(s, "p1", "dmf", "DMF", alt="N,N-dimethylformamide")
    add_chemical(s, "p2", "dmf", "N, N-Dimethylformamide")
    s.close()
    runner = CliRunner()
    review = tmp_path / "review.csv"
    ok = runner.invoke(cli, ["dedup", "--store", str(path), "--class", "chemical", "--json",
                             "--review", str(review)])
    assert ok.exit_code == 0, ok.output
    (summary,) = json.loads(ok.output)
    assert summary["spec"] == "chemical"
    assert (summary["clusters"], summary["cross_paper_clusters"]) == (1, 1)
    bad = runner.invoke(cli, ["dedup", "--store", str(path), "--class", "reagent"])
    assert bad.exit_code == 2 and "unknown class reagent" in bad.output
    EmbeddedStore(tmp_path / "empty").close()
    empty = runner.invoke(cli, ["dedup", "--store", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "no paper graphs" in empty.output
    missing = runner.invoke(cli, ["dedup", "--store", str(tmp_path / "typo")])
    assert missing.exit_code == 2 and "no store at" in missing.output
    assert not (tmp_path / "typo").exists()


BAD_INPUTS = [  # (what, options with {tmp} for the test folder, files to create first)
    ("binary review CSV", ["--apply-review", "{tmp}/r.csv"], {"r.csv": b"\xff\xfe\x00a,b"}),
    ("binary review JSON", ["--apply-review", "{tmp}/r.json"], {"r.json": b"\x89PNG\r\n"}),
    ("review JSON not a list", ["--apply-review", "{tmp}/r.json"], {"r.json": b'{"a": 1}'}),
    ("IRI with a space", ["--apply-review", "{tmp}/r.csv"],
     {"r.csv": b"a,b,decision\nurn:a b,urn:c,accept\n"}),
    ("IRI with a newline", ["--apply-review", "{tmp}/r.json"],
     {"r.json": b'[{"a": "urn:a\\nb", "b": "urn:c", "decision": "accept"}]'}),
    ("empty spec", ["--spec", "{tmp}/s.yaml"], {"s.yaml": b""}),
    ("spec not a mapping", ["--spec", "{tmp}/s.yaml"], {"s.yaml": b"- 1\n- 2\n"}),
    ("spec with a bad field", ["--spec", "{tmp}/s.yaml"],
     {"s.yaml": b"specs:\n  - name: x\n    classes: []\n    labels: []\n    merge: 1\n"}),
    ("binary spec", ["--spec", "{tmp}/s.yaml"], {"s.yaml": b"\xff\xfe\xfd"}),
    ("review into a missing folder", ["--review", "{tmp}/no/such/dir/r.csv"], {}),
]


@pytest.mark.parametrize(("what", "options", "files"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_cli_bad_input_is_one_error_line_and_changes_nothing(tmp_path, what, options, files):
    path = tmp_path / "store"
    s = EmbeddedStore(path)
    add_chemical(s, "p1", "dmf", "DMF", alt="N,N-dimethylformamide")
    add_chemical(s, "p2", "dmf", "N, N-Dimethylformamide")
    before = s.export()
    s.close()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    args = [o.format(tmp=tmp_path) for o in options]
    result = CliRunner().invoke(cli, ["dedup", "--store", str(path), *args])
    assert result.exit_code == 2, (what, result.output)
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    s = EmbeddedStore(path)
    assert s.export() == before
    s.close()


def test_cli_dry_run_writes_no_review_file_unless_asked(tmp_path, monkeypatch):
    path = tmp_path / "store"
    s = EmbeddedStore(path)
    add_chemical(s, "p1", "dmf", "DMF")
    s.close()
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["dedup", "--store", str(path), "--dry-run"]).exit_code == 0
    assert not (tmp_path / "dedup-review.csv").exists()
    asked = runner.invoke(cli, ["dedup", "--store", str(path), "--dry-run", "--review", "r.csv"])
    assert asked.exit_code == 0 and (tmp_path / "r.csv").exists()
