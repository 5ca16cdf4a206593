"""Screenshots in headless Chromium of the reports (the demo report, an extraction run report,
the evidence view of an extracted paper) and of the query page of `kgctl serve` over the demo's
store (an example query, a paper browsed page by page, a grounded species).

    python scripts/screenshots.py [--out out] [--shots docs/screenshots] [--reference DIR]
                                  [--skip-demo]

The demo report comes from `kgctl demo` (the 30 bundled MOP-30 traces; the first run builds the
reference species KG, ~90 s). The run report and the evidence view come from `kgctl extract` on
tests/data/agent/paper.md against the test suite's scripted OpenAI-compatible server (one
malformed call the model then repairs, three evidence quotes of which one is not in the paper),
so no model or key is needed. The query page is served by `kgctl serve` on a free loopback
port over the demo's store (grounded and deduplicated). Prints the path of every file written.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from agent_helpers import DATA, FakeLLM, Reply  # noqa: E402

from kgctl.cli import cli  # noqa: E402
from kgctl.papers.ingest import load_document  # noqa: E402
from kgctl.service.static_examples import load_examples  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 900}
STARTUP_S = 60.0
WAIT_MS = 60_000
PAGE_ROUTES = ("/healthz", "/", "/static/style.css", "/static/results.js",
               "/static/yasgui-page.js", "/static/yasgui/yasgui.min.js", "/papers", "/prefixes",
               "/examples.json")
EXAMPLE = "Species used across several papers"
PAPER = "paper"
QUOTES = (
    ("MOP-1", "Synthesis of MOP-1."),
    ("blue crystals", "The blue crystals were filtered,\n washed with DMF"),
    ("MOP-2", "MOP-2 was obtained as green needles."),  # not in the paper: flagged
)


def run(args: list[str], **kwargs) -> str:
    result = CliRunner().invoke(cli, args, **kwargs)
    if result.exit_code != 0:
        raise SystemExit(f"kgctl {' '.join(args)} failed:\n{result.output}")
    return result.output


def demo(out: Path, reference: Path | None) -> Path:
    workdir = out / "demo"
    run(["demo", "--workdir", str(workdir), "--json",
         *(["--reference", str(reference)] if reference else [])])
    return workdir / "report.html"


def extraction(out: Path) -> tuple[Path, Path]:
    paper = out / "extract" / f"{PAPER}.md"
    paper.parent.mkdir(parents=True, exist_ok=True)
    paper.write_text((DATA / "paper.md").read_text(encoding="utf-8"), encoding="utf-8")
    text = load_document(paper).text
    calls = []
    for label, quote in QUOTES:
        evidence = {"quote": quote, "section": "Experimental Section"}
        if quote in text:
            evidence |= {"start": text.index(quote), "end": text.index(quote) + len(quote)}
        calls.append(("create_chemical_synthesis", json.dumps(
            {"label": label, "chemical_output": {"label": label}, "evidence": evidence})))
    script = [Reply(tool_calls=[("create_chemical_synthesis", "{not json")]),
              Reply(tool_calls=calls, prompt_tokens=1800, completion_tokens=240)]
    store, runs = out / "extract" / "store", out / "extract" / "runs"
    with FakeLLM(script, default=Reply(content="done")) as fake:
        run(["extract", str(paper), "--store", str(store), "--runs", str(runs), "--model",
             "gpt-4o", "--base-url", fake.base_url, "--replace"], env={"OPENAI_API_KEY": "k"})
    evidence_html = out / "evidence.html"
    run(["eval", "evidence", "--store", str(store), "--paper", PAPER, "--out",
         str(evidence_html)])
    return runs / "run-report.html", evidence_html


def shoot(pages: dict[str, Path], shots: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for name, path in pages.items():
                page.goto(path.resolve().as_uri())
                shot = shots / f"{name}.png"
                page.screenshot(path=str(shot), full_page=True)
                written.append(shot)
        finally:
            browser.close()
    return written


def serve(store: Path) -> tuple[subprocess.Popen, str]:
    """`kgctl serve` over `store` on a free loopback port, once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-c", "from kgctl.cli import main; main()",
                                "serve", "--store", str(store), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + STARTUP_S
    waiting = list(PAGE_ROUTES)  # each answered once (a busy server answers 503 meanwhile)
    while waiting:
        try:
            if httpx.get(url + waiting[0], timeout=STARTUP_S).status_code == 200:
                waiting.pop(0)
                continue
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"kgctl serve --store {store} did not start")
        time.sleep(0.2)
    return process, url


def shoot_query_page(store: Path, shots: Path) -> list[Path]:
    """The query page: the example, a browsed paper, what a grounded species links to."""
    from playwright.sync_api import expect, sync_playwright

    process, url = serve(store)
    written = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(WAIT_MS)
                page.goto(url + "/")
                view = page.locator(".kg-results-view[data-decorated]")

                def shot(name: str) -> None:
                    expect(view).to_have_count(1, timeout=WAIT_MS)
                    view.scroll_into_view_if_needed()
                    written.append(shots / f"{name}.png")
                    page.screenshot(path=str(written[-1]))

                page.select_option("#examples", label=next(
                    e["title"] for e in load_examples() if e["title"].startswith(EXAMPLE)))
                page.click(".yasqe_queryButton")
                shot("query_page_example")
                page.locator("#papers button", has_text="browse").first.click()
                expect(view.locator(".pager")).not_to_have_count(0, timeout=WAIT_MS)
                grounded = view.locator("a.same-as").first
                shot("query_page_browse")
                if grounded.count():
                    grounded.click()
                    expect(view.locator(".kg-results")).to_be_visible(timeout=WAIT_MS)
                    shot("query_page_reference_species")
            finally:
                browser.close()
    finally:
        process.terminate()
        process.wait(STARTUP_S)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    parser.add_argument("--shots", type=Path, default=ROOT / "docs" / "screenshots",
                        help="folder of the PNG files")
    parser.add_argument("--reference", type=Path, help="reference species KG folder of the demo")
    parser.add_argument("--skip-demo", action="store_true", help="reuse OUT/demo")
    options = parser.parse_args()
    out, shots = options.out, options.shots
    out.mkdir(parents=True, exist_ok=True)
    shots.mkdir(parents=True, exist_ok=True)
    report = out / "demo" / "report.html" if options.skip_demo else demo(out, options.reference)
    run_report, evidence = extraction(out)
    pages = {"demo_report": report, "run_report": run_report, "evidence_view": evidence}
    for path in [*pages.values(), *shoot(pages, shots),
                 *shoot_query_page(out / "demo" / "store", shots)]:
        print(path)


if __name__ == "__main__":
    main()
