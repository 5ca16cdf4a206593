"""Ingestion and evidence search through their public functions."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from agent_helpers import write_pdf

from kgctl.agent.search import PassageIndex
from kgctl.errors import InputError
from kgctl.papers.ingest import load_document

DATA = Path(__file__).parent / "data" / "agent"


def test_markdown_sections_have_stable_offsets() -> None:
    first = load_document(DATA / "paper.md")
    again = load_document(DATA / "paper.md")
    assert first == again
    assert first.paper_id == "paper"
    titles = [s.title for s in first.sections]
    assert titles == ["Abstract", "Experimental Section", "Characterisation"]
    exp = next(s for s in first.sections if s.title == "Experimental Section")
    body = first.section_text(exp)
    assert body.startswith("All chemicals") and body.endswith("dried under vacuum.")
    offset = first.text.index("85 °C")
    assert first.section_at(offset) == exp


def test_supplementary_files_become_extra_sections() -> None:
    doc = load_document(DATA / "paper.md", supplementary=[DATA / "supplementary.txt"])
    extra = [s for s in doc.sections if s.kind == "supplementary"]
    # the heading "Supporting Information" has no body of its own: no empty section
    assert [s.title for s in extra] == [
        "Supplementary (supplementary.txt): 1. Crystallographic data"
    ]
    assert doc.section_text(extra[-1]).startswith("CCDC 1234567")
    # main sections keep the offsets they have without the supplement
    alone = load_document(DATA / "paper.md")
    assert doc.sections[: len(alone.sections)] == alone.sections


def test_pdf_text_and_headings(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "10.1021_test.pdf", [
        ["Cage paper", "Abstract", "We report cages (MOPs).", "1. Introduction", "Cages are nice-",
         "ly built."],
        ["2. Experimental Section", "Cu(NO3)2 was dissolved in DMF (10 mL)."],
    ])
    doc = load_document(pdf)
    assert doc.paper_id == "10.1021_test"
    sections = {s.title: doc.section_text(s) for s in doc.sections}
    assert sections["1. Introduction"] == "Cages are nicely built."
    assert sections["2. Experimental Section"] == "Cu(NO3)2 was dissolved in DMF (10 mL)."


def _scanned_pdf(path: Path) -> Path:
    fig = plt.figure(figsize=(2, 2))
    fig.figimage(np.random.default_rng(0).random((50, 50)))
    fig.savefig(path, format="pdf")
    plt.close(fig)
    return path


@pytest.mark.parametrize("case", ["garbage", "zero_bytes", "blank_pages", "scanned", "suffix",
                                  "missing", "empty_md"])
def test_bad_papers_give_clear_errors(tmp_path: Path, case: str) -> None:
    expected = {
        "garbage": "not a readable PDF", "zero_bytes": "not a readable PDF",
        "blank_pages": "no extractable text", "scanned": "no extractable text",
        "suffix": "unsupported paper format", "missing": "no such paper file",
        "empty_md": "the file is empty",
    }[case]
    path = {
        "garbage": tmp_path / "g.pdf", "zero_bytes": tmp_path / "z.pdf",
        "blank_pages": tmp_path / "b.pdf", "scanned": tmp_path / "s.pdf",
        "suffix": tmp_path / "x.docx", "missing": tmp_path / "nope.md",
        "empty_md": tmp_path / "e.md",
    }[case]
    if case == "garbage":
        path.write_bytes(b"%PDF-1.4 this is not really a pdf \x00\x01")
    elif case == "zero_bytes":
        path.write_bytes(b"")
    elif case == "blank_pages":
        write_pdf(path, [[], []])
    elif case == "scanned":
        _scanned_pdf(path)
    elif case == "suffix":
        path.write_text("x")
    elif case == "empty_md":
        path.write_text("  \n\n")
    with pytest.raises(InputError, match=expected):
        load_document(path)


def test_search_offsets_point_into_the_paper() -> None:
    doc = load_document(DATA / "paper.md", supplementary=[DATA / "supplementary.txt"])
    hits = PassageIndex(doc).search("CCDC crystallographic data", k=2)
    assert hits[0].section.endswith("Crystallographic data")
    for hit in hits:
        assert doc.text[hit.start:hit.end] == hit.text
    assert PassageIndex(doc).search("zeolite", k=3) == []


def test_mmr_lambda_trades_relevance_for_diversity() -> None:
    from kgctl.papers.ingest import document_from_text

    text = (
        "# Synthesis\nThe solution was heated to 85 C for two days.\n\n"
        "The solution was heated to 85 C for two days again.\n\n"
        "# Drying\nThe solid was dried at 85 C under vacuum.\n"
    )
    index = PassageIndex(document_from_text("p", text))
    pure = index.search("heated 85 C days", k=2, lam=1.0)
    diverse = index.search("heated 85 C days", k=2)  # default lambda 0.5
    assert [h.section for h in pure] == ["Synthesis", "Synthesis"]
    assert [h.section for h in diverse] == ["Synthesis", "Drying"]
    with pytest.raises(InputError, match="lambda"):
        index.search("x", lam=1.5)
    with pytest.raises(InputError, match="k must be"):
        index.search("x", k=0)
