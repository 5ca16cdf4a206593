"""Screenshots of the reports in headless Chromium: the demo report, an extraction run report
and the evidence view of an extracted paper.

    python scripts/screenshots.py [--out out] [--reference DIR] [--skip-demo]

The demo report comes from `kgctl demo` (the 30 bundled MOP-30 traces; the first run builds the
reference species KG, ~90 s). The run report and the evidence view come from `kgctl extract` on
tests/data/agent/paper.md against the test suite's scripted OpenAI-compatible server (one
malformed call the model then repairs, three evidence quotes of which one is not in the paper),
so no model or key is needed. Prints the path of every file written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from agent_helpers import DATA, FakeLLM, Reply  # noqa: E402

from kgctl.cli import cli  # noqa: E402
from kgctl.papers.ingest import load_document  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 900}
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


def shoot(pages: dict[str, Path], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for name, path in pages.items():
                page.goto(path.resolve().as_uri())
                shot = out / f"{name}.png"
                page.screenshot(path=str(shot), full_page=True)
                shots.append(shot)
        finally:
            browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    parser.add_argument("--reference", type=Path, help="reference species KG folder of the demo")
    parser.add_argument("--skip-demo", action="store_true", help="reuse OUT/demo/report.html")
    options = parser.parse_args()
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    report = out / "demo" / "report.html" if options.skip_demo else demo(out, options.reference)
    run_report, evidence = extraction(out)
    pages = {"demo_report": report, "run_report": run_report, "evidence_view": evidence}
    for path in [*pages.values(), *shoot(pages, out)]:
        print(path)


if __name__ == "__main__":
    main()
