"""The query pages in headless Chromium (YASGUI, and the plain page served without it):
examples, prefixes, downloads that fit the query form, errors, and browsing a paper whose graph
the editor then names."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
import pytest
from service_helpers import (
    PAPER,
    PAPER_GRAPH,
    STARTUP_S,
    live_server,
    sample_store,
    warm_up,
)

from kgctl.service.app import YASGUI_SCRIPT
from kgctl.service.static_examples import load_examples

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 15_000
BROWSE_ROWS = 100  # a paper is browsed a page at a time
SOLUTION_FORMATS = ["csv", "tsv", "json", "xml"]
GRAPH_FORMATS = ["turtle", "nt", "jsonld", "rdfxml"]
CONSTRUCT = (f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{PAPER_GRAPH}> {{ ?s ?p ?o }} }} "
             "LIMIT 5")

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                                reason=f"Debian chromium not installed at {CHROMIUM}")


@pytest.mark.skipif(not YASGUI_SCRIPT.exists(),
                    reason="YASGUI not fetched (python scripts/fetch_yasgui.py)")
def test_yasgui_page_runs_examples_offers_fitting_downloads_and_browses() -> None:
    from playwright.sync_api import expect, sync_playwright

    store = sample_store()
    products = load_examples()[0]
    rows = len(list(store.query(products["query"])))
    with live_server(store) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            outside: list[str] = []
            page.on("request", lambda r: outside.append(r.url)
                    if not r.url.startswith(url) else None)
            warm_up(url, time.monotonic() + STARTUP_S)
            page.goto(url + "/")
            expect(page.locator("#default-graph-note")).to_contain_text("union-default-graph")

            page.select_option("#examples", label=products["title"])
            page.click(".yasqe_queryButton")
            chip = page.locator(".yasr_response_chip")
            expect(chip).to_contain_text(f"{rows} results", timeout=WAIT_MS)
            links = page.locator("#download-links a")
            assert [a.get_attribute("data-format") for a in links.all()] == SOLUTION_FORMATS
            csv = httpx.get(url + links.first.get_attribute("href"))
            assert csv.status_code == 200 and csv.text.count("\r\n") == rows + 1
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "service_query_page.png"))

            page.evaluate("query => yasgui.getTab().setQuery(query)", CONSTRUCT)
            page.click(".yasqe_queryButton")
            expect(page.locator("#download-links a").first).to_have_attribute(
                "data-format", GRAPH_FORMATS[0], timeout=WAIT_MS)
            assert [a.get_attribute("data-format")
                    for a in page.locator("#download-links a").all()] == GRAPH_FORMATS

            page.locator("#prefixes button", has_text="ontosyn").click()
            assert "PREFIX ontosyn:" in page.evaluate("yasgui.getTab().getYasqe().getValue()")

            row = page.locator("#papers tbody tr", has_text=PAPER)
            expect(row).to_have_count(1, timeout=WAIT_MS)
            triples = int(row.locator("td").nth(1).inner_text())
            row.get_by_role("button", name="browse").click()
            expect(chip).to_contain_text(f"{min(triples, BROWSE_ROWS)} results", timeout=WAIT_MS)
            assert f"GRAPH <{PAPER_GRAPH}>" in page.evaluate(
                "yasgui.getTab().getYasqe().getValue()")
            assert row.get_by_role("link", name="Turtle").get_attribute("href").startswith(
                "/store?graph=")
        finally:
            browser.close()
    assert outside == []  # no CDN, no prefix or vocabulary services
    assert (ARTIFACTS / "service_query_page.png").stat().st_size > 0


def test_plain_page_offers_fitting_downloads_clears_on_error_and_names_browsed_graph() -> None:
    """The page served when YASGUI is not fetched (also reachable at /static/index.html)."""
    from playwright.sync_api import expect, sync_playwright

    store = sample_store()
    products = load_examples()[0]
    rows = len(list(store.query(products["query"])))
    with live_server(store) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url + "/static/index.html")
            expect(page.locator("#default-graph-note")).to_contain_text("union-default-graph")
            status, links = page.locator("#status"), page.locator("#download-links a")
            assert page.locator("#downloads").is_hidden()

            page.select_option("#examples", label=products["title"])
            page.click("#run")
            expect(status).to_contain_text(f"{rows} rows", timeout=WAIT_MS)
            assert [a.get_attribute("data-format") for a in links.all()] == SOLUTION_FORMATS
            csv = httpx.get(url + links.first.get_attribute("href"))
            assert csv.status_code == 200 and csv.text.count("\r\n") == rows + 1

            page.fill("#query", "# SELECT in a comment\n" + CONSTRUCT)
            page.click("#run")
            expect(status).to_contain_text("graph in", timeout=WAIT_MS)
            assert [a.get_attribute("data-format") for a in links.all()] == GRAPH_FORMATS
            turtle = httpx.get(url + links.first.get_attribute("href"))
            assert turtle.status_code == 200 and "text/turtle" in turtle.headers["content-type"]

            page.fill("#query", "SELECT ?s WHERE { ?s nope:p ?o }")
            page.click("#run")
            expect(status).to_have_class("error", timeout=WAIT_MS)
            assert status.inner_text().count("\n") == 0 and "error: invalid SPARQL" in \
                status.inner_text()
            assert page.locator("#results tr").count() == 0
            assert page.locator("#graph").is_hidden() and page.locator("#downloads").is_hidden()

            row = page.locator("#papers tbody tr", has_text=PAPER)
            expect(row).to_have_count(1, timeout=WAIT_MS)
            triples = int(row.locator("td").nth(1).inner_text())
            row.get_by_role("button", name="browse").click()
            expect(status).to_contain_text(f"{min(triples, BROWSE_ROWS)} rows", timeout=WAIT_MS)
            assert f"GRAPH <{PAPER_GRAPH}>" in page.input_value("#query")
        finally:
            browser.close()
