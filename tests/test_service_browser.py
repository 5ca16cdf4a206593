"""The query page in headless Chromium: pick an example, run it, see rows, browse a paper."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from service_helpers import PAPER, live_server, sample_store

from kgctl.service.static_examples import load_examples

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 15_000

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                                reason=f"Debian chromium not installed at {CHROMIUM}")


def test_page_runs_a_query_and_browses_a_paper() -> None:
    from playwright.sync_api import expect, sync_playwright

    store = sample_store()
    products = load_examples()[0]
    rows = len(list(store.query(products["query"])))
    with live_server(store) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url + "/")
            page.select_option("#examples", label=products["title"])
            page.click("#run")
            expect(page.locator("#status")).to_contain_text(f"{rows} rows", timeout=WAIT_MS)
            headers = page.locator("#results thead th").all_inner_texts()
            assert headers == ["paper", "product", "ccdc"]
            assert rows > 0 and page.locator("#results tbody tr").count() == rows
            first = page.locator("#results tbody tr").first.locator("td").all_inner_texts()
            assert first[0].startswith("10.")
            csv_link = page.locator('#downloads a[data-format="csv"]').get_attribute("href")
            assert csv_link.startswith("/query?") and "format=csv" in csv_link
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "service_query_page.png"), full_page=False)

            row = page.locator("#papers tbody tr", has_text=PAPER)
            expect(row).to_have_count(1, timeout=WAIT_MS)
            row.get_by_role("button", name="browse").click()
            expect(page.locator("#status")).to_contain_text("rows", timeout=WAIT_MS)
            triples = int(row.locator("td").nth(1).inner_text())
            assert page.locator("#results tbody tr").count() == min(triples, 500)
            download = row.get_by_role("link", name="Turtle").get_attribute("href")
            assert download.startswith("/store?graph=")
        finally:
            browser.close()
    assert (ARTIFACTS / "service_query_page.png").stat().st_size > 0
