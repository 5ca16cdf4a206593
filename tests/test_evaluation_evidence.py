"""The evidence view: a test paper extracted through `kgctl extract` (scripted LLM), its quotes
located (one across a whitespace difference, one at its offsets) or flagged, written by
`kgctl eval evidence` and served by `kgctl serve`'s app, checked in headless Chromium."""

from __future__ import annotations

import html
import json
import shlex
import shutil
from pathlib import Path

import pytest
from agent_helpers import DATA, NO_CHEMISTRY, FakeLLM, Reply
from click.testing import CliRunner

from kgctl.cli import cli
from kgctl.evaluation.evidence import locate, squeeze, view_from_store
from kgctl.evaluation.evidence_page import render_page
from kgctl.papers.ingest import load_document
from kgctl.store import EmbeddedStore

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 15_000
PAPER = "paper"
REAL = "Synthesis of MOP-1."
SPACED = "The blue crystals were   filtered,\n washed with DMF"  # text: single spaces
FAKE = "MOP-2 was obtained as green needles."


@pytest.mark.parametrize(("quote", "start", "end", "expected"), [
    ("b  c", None, None, (2, 5)),        # whitespace runs compare as one space
    ("b c", 2, 5, (2, 5)),               # recorded offsets kept when the text there matches
    ("b c", 0, 3, (2, 5)),               # wrong offsets: searched instead
    ("x y", None, None, None),           # not in the text: flagged
    ("   ", None, None, None),
])
def test_locate(quote: str, start: int | None, end: int | None, expected) -> None:
    assert locate("a b\nc d", quote, start, end) == expected


def test_squeeze_maps_back_to_the_text() -> None:
    squeezed, where = squeeze("x\n\n y  z")
    assert (squeezed, where) == ("x y z", [0, 1, 4, 5, 7])  # a run maps to its first blank


def _extract(tmp_path: Path) -> tuple[Path, Path]:
    """Extract tests/data/agent/paper.md with three synthesis calls quoting evidence."""
    paper = tmp_path / f"{PAPER}.md"
    shutil.copy(DATA / "paper.md", paper)
    text = load_document(paper).text
    start = text.index(REAL)
    calls = [
        ("MOP-1", {"quote": REAL, "section": "Experimental Section", "start": start,
                   "end": start + len(REAL)}),
        ("blue crystals", {"quote": SPACED}),
        ("MOP-2", {"quote": FAKE, "section": "Experimental Section"}),
    ]
    reply = Reply(tool_calls=[("create_chemical_synthesis", json.dumps(
        {"label": label, "chemical_output": {"label": label}, "evidence": evidence}))
        for label, evidence in calls])
    store = tmp_path / "store"
    with FakeLLM([reply], default=Reply(content="done")) as fake:
        result = CliRunner().invoke(cli, ["extract", str(paper), "--store", str(store),
                                          "--runs", str(tmp_path / "runs"), "--model", "m",
                                          "--base-url", fake.base_url, "--json", *NO_CHEMISTRY],
                                    env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["accepted"] == 3  # warnings go to stderr
    return store, paper


def test_evidence_file_flags_the_quote_that_is_not_in_the_text(tmp_path: Path) -> None:
    store, _paper = _extract(tmp_path)
    out = tmp_path / "evidence.html"
    result = CliRunner().invoke(cli, ["eval", "evidence", "--store", str(store), "--paper", PAPER,
                                      "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    spans = {s["quote"]: s for s in data["spans"]}
    assert len(spans) == 3 and data["flagged"] == [spans[FAKE]["seq"]]
    text = load_document(DATA / "paper.md").text
    real, spaced = spans[REAL], spans[SPACED]
    assert text[real["start"]:real["end"]] == REAL
    assert text[spaced["start"]:spaced["end"]] == "The blue crystals were filtered, washed with DMF"
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "http" not in page.split("<body>")[1].split("<code>")[0]
    missing = CliRunner().invoke(cli, ["eval", "evidence", "--store", str(store), "--paper", "nope",
                                       "--out", str(out)])
    assert missing.exit_code == 2 and missing.output.startswith("error: unknown paper")


def test_a_page_without_the_text_suggests_a_command_that_works(tmp_path: Path) -> None:
    store_path, paper = _extract(tmp_path)
    store = EmbeddedStore(store_path)
    try:
        page = render_page(view_from_store(store, PAPER).model_copy(update={"text": None}))
    finally:
        store.close()
    command = html.unescape(page.split("class='notice'")[1].split("<code>")[1].split("</code>")[0])
    out = tmp_path / "placed.html"
    argv = shlex.split(command.replace("STORE", str(store_path))
                       .replace("PAPER_FILE", str(paper)).replace("evidence.html", str(out)))
    assert argv[0] == "kgctl"
    result = CliRunner().invoke(cli, argv[1:])
    assert result.exit_code == 0, result.output
    assert "class='notice'" not in out.read_text(encoding="utf-8")  # the quotes are placed


@pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                    reason=f"Debian chromium not installed at {CHROMIUM}")
def test_served_evidence_view_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright
    from service_helpers import live_server


    store_dir, _paper = _extract(tmp_path)
    with live_server(store_dir) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            assert page.goto(url + "/papers/nope/evidence").status == 404
            page.goto(url + f"/papers/{PAPER}/evidence")
            expect(page.locator("#flagged li")).to_have_count(1, timeout=WAIT_MS)
            assert FAKE in page.locator("#flagged").inner_text()
            highlights = page.locator("#text a.ev")
            assert highlights.count() == 2
            assert highlights.all_inner_texts() == [
                REAL, "The blue crystals were filtered, washed with DMF"]
            seq = highlights.nth(1).get_attribute("data-calls")
            highlights.nth(1).click()
            assert page.url.endswith(f"#call-{seq}")
            call = page.locator(f"#call-{seq}")
            assert "create_chemical_synthesis" in call.inner_text()
            call.locator("a[href^='#entity-']").first.click()
            entity = page.locator(".entity:target")
            expect(entity).to_have_count(1, timeout=WAIT_MS)
            assert "blue crystals" in entity.inner_text() and "in the text" in entity.inner_text()
        finally:
            browser.close()
