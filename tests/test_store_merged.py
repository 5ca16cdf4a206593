"""The merged view (store/merged.py): one canonical identity per grounded or deduplicated entity,
followed by every reader (the endpoint's view parameter, the pack's examples, the entity filter of
read-out and retrieval, CSV exports, the evidence view), with the raw paper graphs untouched.

The store is the demo's own, made the way `kgctl demo` makes it offline: three bundled papers that
name N,N-dimethylformamide by different spellings, replayed, grounded against a small slice of the
reference tables, deduplicated and merged.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from grounding_helpers import build_small_reference, iri
from pyoxigraph import Literal, NamedNode, Store

from kgctl.assets import asset_dir
from kgctl.cli import cli
from kgctl.service.dataset import Dataset
from kgctl.service.execution import HttpProblem, Limits, answer
from kgctl.service.protocol import parse_operation
from kgctl.service.static_examples import load_examples
from kgctl.store import EmbeddedStore
from kgctl.store.entities import papers_using, same_identity
from kgctl.store.iris import graph_iri
from kgctl.store.merged import rebuild
from kgctl.store.views import merged_graph_iri

TRACES = asset_dir("domains") / "mop30" / "benchmark" / "traces"
# "DMF", "N,N-dimethylformamide" and "n, n-dimethylformamide" between them
PAPERS = ("10.1021_acsami.8b02015", "10.1002_chem.201700848", "10.1021_acsami.7b18836")
DMF = iri("68-12-2")
SPELLINGS = {"dmf", "n,n-dimethylformamide", "n, n-dimethylformamide"}
ACROSS = "Species used across several papers"
# the example as the page shipped it: one row per label
BY_LABEL = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?species (COUNT(DISTINCT ?g) AS ?papers) WHERE {
  GRAPH ?g { ?step ontosyn:hasAddedChemicalInput ?input . ?input rdfs:label ?species . }
} GROUP BY ?species"""
USERS = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT DISTINCT ?g ?label WHERE {
  GRAPH ?g { ?step ontosyn:hasAddedChemicalInput ?input . ?input rdfs:label ?label . } }"""
LIMITS = Limits(max_rows=10_000, max_bytes=10_000_000)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """`kgctl demo` on the three papers; the folder holds store/ and report.json."""
    tmp = tmp_path_factory.mktemp("merged")
    traces = tmp / "traces"
    traces.mkdir()
    for paper in PAPERS:
        shutil.copy(TRACES / f"{paper}.jsonl", traces)
    reference = build_small_reference(tmp / "reference")
    done = CliRunner().invoke(cli, ["demo", "--traces", str(traces), "--workdir",
                                    str(tmp / "demo"), "--reference", str(reference), "--json"],
                              env={"KGCTL_CACHE": str(tmp / "cache")})
    assert done.exit_code == 0, done.output
    return tmp / "demo"


@pytest.fixture()
def store(demo: Path) -> Iterator[EmbeddedStore]:
    opened = EmbeddedStore(demo / "store")
    yield opened
    opened.close()


def _example(title: str) -> str:
    return next(e["query"] for e in load_examples() if e["title"].startswith(title))


def test_dmf_is_one_row_with_the_union_of_its_papers(store: EmbeddedStore) -> None:
    raw = [r for r in store.query(BY_LABEL, view="raw")
           if r["species"].value.casefold() in SPELLINGS]
    assert len(raw) >= 2  # the raw view: one row per spelling
    users = {r["g"].value for r in store.query(USERS, view="raw")
             if r["label"].value.casefold() in SPELLINGS}
    rows = list(store.query(_example(ACROSS), view="merged"))
    dmf = [r for r in rows if r["species"] == NamedNode(DMF)]
    assert len(dmf) == 1 and int(dmf[0]["papers"].value) == len(users) == len(PAPERS)
    names = [r["name"].value.casefold() for r in rows]
    assert len(names) == len(set(names)) and not SPELLINGS & set(names) - {dmf[0]["name"].value}
    by_label = list(store.query(_example(ACROSS), view="raw"))  # no identities there: labels
    assert by_label and all(isinstance(r["species"], Literal) for r in by_label)


def test_paper_graphs_stay_untouched_and_merging_again_changes_nothing(
        store: EmbeddedStore) -> None:
    def dump(graph: NamedNode) -> str:
        return "\n".join(sorted(str(t) for t in store.query(
            "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }", bindings={"g": graph})))

    paper = PAPERS[0]
    raw, merged = dump(graph_iri(paper)), dump(merged_graph_iri(paper))
    assert merged and not set(raw.splitlines()) & set(merged.splitlines())  # no fact copied
    assert all("ns#canonical" in line or "core#prefLabel" in line for line in merged.splitlines())
    rebuild(store, [paper])
    assert (dump(graph_iri(paper)), dump(merged_graph_iri(paper))) == (raw, merged)


def test_views_count_each_fact_once(store: EmbeddedStore) -> None:
    count = ("SELECT (COUNT(*) AS ?n) WHERE { ?s a "
             "<https://www.theworldavatar.com/kg/OntoSyn/ChemicalSynthesis> }")
    graphs = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    n = {view: int(next(iter(store.query(count, union=True, view=view)))["n"].value)
         for view in ("raw", "merged", None)}
    assert n["raw"] == n["merged"] == n[None] > 0
    seen = {view: {r["g"].value.rsplit("/", 2)[-2] for r in store.query(graphs, view=view)
                   if r["g"].value.endswith(PAPERS)} for view in ("raw", "merged")}
    assert seen == {"raw": {"paper"}, "merged": {"paper", "merged"}}


def test_endpoint_view_parameter(demo: Path, tmp_path: Path) -> None:
    Store(str(demo / "store")).backup(str(tmp_path / "copy"))  # the service owns its store
    dataset = Dataset.open(tmp_path / "copy")

    def ask(*params: tuple[str, str]) -> tuple[int, str]:
        op = parse_operation("GET", None, [("query", _example(ACROSS)), *params],
                             b"", accept="application/sparql-results+json")
        status, _, body = answer(dataset, op, LIMITS)
        return status, body.decode()

    status, body = ask()
    bindings = json.loads(body)["results"]["bindings"]
    assert status == 200 and sum(b["species"]["value"] == DMF for b in bindings) == 1
    assert ask(("view", "merged"))[1] == body
    raw = json.loads(ask(("view", "raw"))[1])["results"]["bindings"]
    assert raw and all(b["species"]["type"] == "literal" for b in raw)  # labels, no identities
    with pytest.raises(HttpProblem, match="unknown view 'cooked': choose merged or raw") as bad:
        ask(("view", "cooked"))
    assert bad.value.status == 400
    papers = {p.paper: p for p in dataset.papers()}
    assert papers[PAPERS[0]].graph == graph_iri(PAPERS[0]).value
    assert papers[PAPERS[0]].merged_graph == merged_graph_iri(PAPERS[0]).value


def test_entity_filter_finds_every_paper_under_any_name(demo: Path) -> None:
    store = EmbeddedStore(demo / "store")
    assert papers_using(store, "DMF") == papers_using(store, "N,N-Dimethylformamide") \
        == papers_using(store, DMF) == sorted(PAPERS)
    assert papers_using(store, "no such thing") == []
    one = next(r["x"].value for r in store.query(
        "SELECT ?x WHERE { GRAPH ?g { ?x <http://www.w3.org/2000/01/rdf-schema#label> 'DMF' } }"
        " LIMIT 1", view="merged"))
    widened = same_identity(store, [one])
    assert len(widened) > 3 and len({w.split("/paper/")[1].split("/")[0]
                                     for w in widened}) == len(PAPERS)
    store.close()
    done = CliRunner().invoke(cli, ["eval", "run", "--store", str(demo / "store"),
                                    "--entity", "dmf", "--json"])
    assert done.exit_code == 0, done.output
    assert sorted(json.loads(done.output)["papers"]) == sorted(PAPERS)
    product = CliRunner().invoke(cli, ["eval", "run", "--store", str(demo / "store"),
                                       "--entity", "mop-mia", "--json"])
    assert product.exit_code == 0 and len(json.loads(product.output)["papers"]) == 1
    none = CliRunner().invoke(cli, ["eval", "run", "--store", str(demo / "store"),
                                    "--entity", "no such thing"])
    assert none.exit_code == 2 and "no benchmark paper in the store used" in none.output


def test_csv_table_of_syntheses_with_grounded_identifiers(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "syntheses.csv"
    done = CliRunner().invoke(cli, ["store", "export", "--store", str(demo / "store"),
                                    "--format", "csv", "--table", "syntheses", "--out",
                                    str(out)])
    assert done.exit_code == 0, done.output
    data = out.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\r\n" in data
    rows = list(csv.DictReader(data.decode("utf-8-sig").splitlines()))
    assert list(rows[0])[:6] == ["paper", "synthesis", "products", "input", "formula", "amount"]
    dmf = [r for r in rows if r["input"].casefold() in SPELLINGS]
    assert dmf and all(r["cas"] == "68-12-2" and r["identity"] == DMF for r in dmf)
    assert {r["paper"] for r in dmf} == set(PAPERS) and any(r["amount"] for r in dmf)
    raw = CliRunner().invoke(cli, ["store", "export", "--store", str(demo / "store"),
                                   "--format", "csv", "--table", "syntheses", "--view", "raw"])
    assert raw.exit_code == 0 and "68-12-2" not in raw.output
    for args, message in ((["--format", "csv"], "--format csv and --table NAME go together"),
                          (["--format", "csv", "--table", "nope"], "declares no table 'nope'")):
        bad = CliRunner().invoke(cli, ["store", "export", "--store", str(demo / "store"), *args])
        assert bad.exit_code == 2 and message in bad.output and "Traceback" not in bad.output


def test_evidence_view_links_each_entity_to_its_identity(demo: Path, tmp_path: Path) -> None:
    page = tmp_path / "evidence.html"
    done = CliRunner().invoke(cli, ["eval", "evidence", "--store", str(demo / "store"),
                                    "--paper", PAPERS[1], "--out", str(page)])
    assert done.exit_code == 0, done.output
    text = page.read_text(encoding="utf-8")
    assert f"same as <a href='{DMF}'>" in text and "(grounding:" in text


def test_demo_counts_grounding_by_role(demo: Path) -> None:
    grounding = json.loads((demo / "report.json").read_text(encoding="utf-8"))["grounding"]
    roles = grounding["by_role"]
    assert {"reagent", "product"} <= set(roles)
    assert sum(r["entities"] for r in roles.values()) == grounding["entities"]
    assert sum(r["grounded"] for r in roles.values()) == grounding["grounded"]
    products = set(roles["product"]["ungrounded"])
    assert products and not products & set(roles["reagent"]["ungrounded"])
    assert "metal solution" not in roles["reagent"]["ungrounded"]


def test_a_write_after_the_merge_drops_the_stale_identities() -> None:
    from pyoxigraph import Literal, Triple

    store = EmbeddedStore()
    node = NamedNode("https://w3id.org/kgctl/paper/p1/Thing/a")
    label = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    same = NamedNode("http://www.w3.org/2002/07/owl#sameAs")
    store.write("p1", insert=[Triple(node, label, Literal("a")),
                              Triple(node, same, NamedNode("https://example.org/ref/a"))])
    rebuild(store)
    graphs = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    merged = {graph_iri("p1").value, merged_graph_iri("p1").value}
    assert {r["g"].value for r in store.query(graphs, view="merged")} >= merged
    store.write("p1", insert=[Triple(node, label, Literal("b"))])  # the merge is now stale
    assert merged_graph_iri("p1").value not in {
        r["g"].value for r in store.query(graphs, view="merged")}
    rebuild(store, ["p1"])
    identity = "SELECT ?i WHERE { ?s <https://w3id.org/kgctl/ns#canonical> ?i }"
    assert [r["i"].value for r in store.query(identity, union=True, view="merged")] == [
        "https://example.org/ref/a"]


def test_a_second_pack_declares_its_own_table(tmp_path: Path) -> None:
    trace = next(iter(sorted((asset_dir("domains") / "nerre-doping" / "benchmark" / "traces")
                             .glob("*.jsonl"))))
    store = str(tmp_path / "store")
    assert CliRunner().invoke(cli, ["store", "replay", str(trace), "--store", store]
                              ).exit_code == 0
    done = CliRunner().invoke(cli, ["store", "export", "--store", store, "--domain",
                                    "nerre-doping", "--format", "csv", "--table", "dopings"])
    assert done.exit_code == 0, done.output
    rows = list(csv.DictReader(done.output.lstrip("\ufeff").splitlines()))
    assert rows and list(rows[0]) == ["paper", "sentence", "host", "dopant"]
    assert {r["paper"] for r in rows} == {trace.stem} and all(r["host"] for r in rows)


def test_query_tools_read_the_view_they_are_given(store: EmbeddedStore) -> None:
    from kgctl.retrieval.commands import build_engine

    linked = "ASK { ?entity <https://w3id.org/kgctl/ns#canonical> ?identity }"
    seen = {view: bool(build_engine(store, None, view=view).store.query(linked, union=True))
            for view in ("merged", "raw")}
    assert seen == {"merged": True, "raw": False}
