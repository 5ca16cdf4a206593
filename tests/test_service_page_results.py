"""The query page as a reader sees it, in headless Chromium against a real `kgctl serve` on a
seeded store: labels beside IRIs, compact prefixes, plain literals with their datatype on
hover, a pager instead of a silent LIMIT, links to the evidence view and to the reference
species an entity is the same as, the merged/raw view option, empty states (no result, empty
store) on both pages, and screenshots that are not blank."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
from pyoxigraph import Literal, NamedNode, Quad, Store
from service_helpers import PAPER, PAPER_GRAPH, free_port, warm_up

from kgctl.pipeline.demo import bundled_traces
from kgctl.pipeline.seed import pack_quads
from kgctl.service.app import YASGUI_SCRIPT
from kgctl.service.static_examples import load_examples

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).parent / "artifacts"
STARTUP_S = 60.0
WAIT_MS = 15_000
REFERENCE = "https://w3id.org/kgctl/reference/species/127-09-3"
INPUT_LABEL = "Sodium acetate"
BROWSE_ROWS = 100
TOKEN = "page-test"
# PAPER and three papers that share species with it (the demo seeds all 30; these suffice)
PAPERS = {PAPER, "10.1021_ic050460z", "10.1021_ja042802q", "10.1039_C5DT04764A"}

pytestmark = [
    pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                       reason=f"Debian chromium not installed at {CHROMIUM}"),
    pytest.mark.skipif(not YASGUI_SCRIPT.exists(),
                       reason="YASGUI not fetched (python scripts/fetch_yasgui.py)"),
]


def serve(store: Path, port: int) -> subprocess.Popen:
    """`kgctl serve` over the store directory on `port`, once it answers the page's routes."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve", "--store",
         str(store), "--port", str(port), "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "KGCTL_UPDATE_TOKEN": TOKEN})
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                warm_up(f"http://127.0.0.1:{port}", deadline)
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"kgctl serve did not start: {process.stderr.read().decode()}")
        time.sleep(0.1)


def seeded_store(path: Path) -> str:
    """The demo graphs (as `kgctl serve --seed` writes them) in a store directory, one input of
    PAPER grounded by hand as `kgctl ground` does (owl:sameAs in the paper's graph) and the
    reference species labelled; the input's IRI. The directory is closed for the server."""
    store = Store(str(path))
    traces = [t for t in bundled_traces() if t.stem in PAPERS]
    assert len(traces) == len(PAPERS)
    store.extend(pack_quads(traces=traces))
    entity = next(iter(store.query(f"""SELECT ?input WHERE {{ GRAPH <{PAPER_GRAPH}> {{
        ?input a <https://www.theworldavatar.com/kg/OntoSyn/ChemicalInput> ;
               <http://www.w3.org/2000/01/rdf-schema#label> "{INPUT_LABEL}" }} }}""")))["input"]
    reference = NamedNode(REFERENCE)
    store.extend([Quad(entity, NamedNode("http://www.w3.org/2002/07/owl#sameAs"), reference,
                       NamedNode(PAPER_GRAPH)),
                  Quad(reference, NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                       Literal("sodium acetate"), NamedNode("https://w3id.org/kgctl/reference"))])
    store.flush()
    del store  # releases the directory's lock
    return entity.value


def queries(bodies: list[str]) -> list[dict[str, list[str]]]:
    """The page's own queries among the POST bodies sent to /query (not its label lookups)."""
    sent = [parse_qs(body) for body in bodies]
    return [q for q in sent if "VALUES ?iri" not in q["query"][0]]


def rows(url: str, query: str) -> list[dict]:
    answer = httpx.post(url + "/query", data={"query": query, "union-default-graph": "true"},
                        headers={"Accept": "application/sparql-results+json"})
    answer.raise_for_status()
    return answer.json()["results"]["bindings"]


def not_blank(png: Path) -> bool:
    """Whether a screenshot shows something: many colours, and ink on a good part of it."""
    from PIL import Image  # Pillow comes with rdkit, a test dependency

    with Image.open(png) as image:
        grey = image.convert("L")
        ink = sum(1 for value in grey.get_flattened_data() if value < 200)
        return len(image.convert("RGB").getcolors(1 << 20) or ()) > 50 and \
            ink > 0.01 * grey.width * grey.height


def test_page_reads_plainly_pages_links_and_says_what_to_do(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    entity = seeded_store(tmp_path / "kg")
    port = free_port()
    process = serve(tmp_path / "kg", port)
    url = f"http://127.0.0.1:{port}"
    try:
        species = next(e for e in load_examples() if e["title"].startswith("Species used"))
        species_rows = len(rows(url, species["query"]))
        assert species_rows > 0
        triples = len(rows(url, f"SELECT * WHERE {{ GRAPH <{PAPER_GRAPH}> {{ ?s ?p ?o }} }}"))
        assert BROWSE_ROWS < triples < 2 * BROWSE_ROWS  # two pages, the second one short
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                sent: list[str] = []
                page.on("request", lambda r: sent.append(r.post_data or "")
                        if r.url == url + "/query" and r.method == "POST" else None)
                page.goto(url + "/")
                view = page.locator(".kg-results-view[data-decorated]")

                # an aggregate: plain numbers, typed on hover, never "11"^^<http://...#integer>
                page.select_option("#examples", label=species["title"])
                page.click(".yasqe_queryButton")
                expect(view).to_have_count(1, timeout=WAIT_MS)
                table = view.locator("table.kg-results")
                assert table.locator("tbody tr").count() == species_rows
                assert "^^" not in table.inner_text() and "http://www.w3.org" not in \
                    table.inner_text()
                headers = table.locator("thead th").all_inner_texts()
                column = next(i for i, text in enumerate(headers) if "papers" in text)
                count = table.locator("tbody tr").first.locator("td").nth(column).locator(
                    ".literal")
                assert re.fullmatch(r"\d+", count.inner_text())
                assert count.get_attribute("title") == "xsd:integer"
                assert queries(sent)[-1]["view"] == ["merged"]
                assert queries(sent)[-1]["union-default-graph"] == ["true"]
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "page_species.png"))

                # a paper page by page: labels beside IRIs, compact prefixes, evidence links
                row = page.locator("#papers tbody tr", has_text=PAPER)
                row.get_by_role("button", name="browse").click()
                pager = view.locator(".pager").first
                expect(pager).to_contain_text(f"rows 1–{BROWSE_ROWS}", timeout=WAIT_MS)
                assert view.locator("tbody tr").count() == BROWSE_ROWS
                cells = view.locator("table.kg-results").inner_text()
                assert "rdf:type" in cells and "ontosyn:" in cells and "^^" not in cells
                assert view.locator(".label", has_text=INPUT_LABEL).count() > 0
                assert view.locator("a.evidence").first.get_attribute("href") == \
                    f"/papers/{PAPER}/evidence"
                same = view.locator("a.same-as", has_text="sodium acetate").first
                expect(same).to_have_attribute("title", REFERENCE)
                assert same.locator("xpath=../..").locator("a.iri").get_attribute(
                    "title") == entity
                view.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / "page_browse.png"))

                pager.locator("button.next").click()
                expect(view.locator(".pager").first).to_contain_text(
                    f"rows {BROWSE_ROWS + 1}–{triples}", timeout=WAIT_MS)
                assert f"OFFSET {BROWSE_ROWS}" in page.evaluate(
                    "yasgui.getTab().getYasqe().getValue()")
                assert view.locator(".pager button.next").first.is_disabled()
                view.locator(".pager button.previous").last.click()
                expect(view.locator(".pager").first).to_contain_text(
                    f"rows 1–{BROWSE_ROWS}", timeout=WAIT_MS)

                # the reference species: what the store says about it, asked for in raw view
                page.select_option("#view", "raw")
                view.locator("a.same-as", has_text="sodium acetate").first.click()
                expect(view.locator("table.kg-results")).to_contain_text(
                    "sodium acetate", timeout=WAIT_MS)
                assert REFERENCE in page.evaluate("yasgui.getTab().getYasqe().getValue()")
                # the paper's input the same as it, with its label
                expect(view.locator(f'a.iri[title="{entity}"]').first).to_be_visible(
                    timeout=WAIT_MS)
                expect(view.locator(".label", has_text=INPUT_LABEL).first).to_be_visible()
                assert queries(sent)[-1]["view"] == ["raw"]

                # a query that matches nothing says what to do
                page.evaluate("q => yasgui.getTab().setQuery(q)",
                              "SELECT ?s WHERE { ?s a <urn:nothing> }")
                page.click(".yasqe_queryButton")
                expect(view.locator(".empty")).to_contain_text("nothing matched",
                                                               timeout=WAIT_MS)

                page.goto(f"{url}/papers/{PAPER}/evidence")
                expect(page.locator("body")).to_contain_text(INPUT_LABEL, timeout=WAIT_MS)
                page.screenshot(path=str(ARTIFACTS / "page_evidence.png"), full_page=True)

                # an empty store says how to load it, on both pages
                emptied = httpx.post(url + "/update", data={"update": "DROP ALL"},
                                     headers={"Authorization": f"Bearer {TOKEN}"})
                assert emptied.status_code == 204, emptied.text
                for path, run in (("/", ".yasqe_queryButton"), ("/static/index.html", "#run")):
                    page.goto(url + path)
                    expect(page.locator("#papers .empty")).to_contain_text(
                        "kgctl serve --seed", timeout=WAIT_MS)
                    if path != "/":  # the plain page's editor gets the first example
                        expect(page.locator("#query")).not_to_have_value("", timeout=WAIT_MS)
                    page.click(run)
                    expect(page.locator(".kg-results-view .empty, #results .empty")
                           ).to_contain_text("no papers yet", timeout=WAIT_MS)
            finally:
                browser.close()
    finally:
        process.terminate()
        process.wait(STARTUP_S)
    for name in ("page_species", "page_browse", "page_evidence"):
        assert not_blank(ARTIFACTS / f"{name}.png"), name
