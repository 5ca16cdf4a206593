"""Paper ingestion: PDF, Markdown or plain text -> one text with sections at stable offsets.

The text of a paper is normalised once (line endings, trailing blanks, hyphenated line breaks
of PDFs, runs of blank lines) and every later offset (evidence spans, search passages) refers to
that text. Supplementary files are appended as further sections. The same files always give the
same text and the same offsets.

A domain pack may add section-title words (``sections:`` in its ``domain.yaml``) that make a
short plain-text line a heading beside the usual ones.

>>> doc = document_from_text("p1", "# Intro\\nCages are hollow.\\n\\n## Methods\\nMix A and B.\\n")
>>> [(s.title, doc.text[s.start:s.end]) for s in doc.sections]
[('Intro', 'Cages are hollow.'), ('Methods', 'Mix A and B.')]
>>> doc.section_at(doc.text.index("Mix")).title
'Methods'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kgctl.errors import InputError
from kgctl.store.iris import paper_id as make_paper_id

SUFFIXES = {".pdf": "pdf", ".md": "markdown", ".markdown": "markdown", ".txt": "text"}
# A PDF whose pages yield fewer characters than this on average is treated as scanned.
MIN_CHARS_PER_PAGE = 20
# Plain-text heading heuristic: a short line naming a usual section, or a numbered short line
# after a blank line or a finished sentence (PDF text keeps no blank lines).
MAX_HEADING_CHARS = 80
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_NUMBERED_HEADING = re.compile(r"^(\d+(\.\d+)*\.?|[IVX]+\.)\s+[A-Z][^.!?]*$")
USUAL_HEADINGS = (
    r"abstract|introduction|experimental( section| details)?|results( and discussion)?|"
    r"discussion|conclusions?|methods|materials and methods|references|acknowledg(e)?ments|"
    r"supporting information")
_HYPHEN_BREAK = re.compile(r"(?<=[a-z])-\n(?=[a-z])")
_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+\n")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Section(Frozen):
    """A titled span ``text[start:end]`` of the document."""

    title: str
    start: int
    end: int
    source: str  # file name the section came from
    kind: Literal["main", "supplementary"] = "main"


class Document(Frozen):
    """One paper as a single normalised text with its sections."""

    paper_id: str
    text: str
    sections: tuple[Section, ...]

    def section_at(self, offset: int) -> Section | None:
        """The section containing a character offset."""
        return next((s for s in self.sections if s.start <= offset < s.end), None)

    def section_text(self, section: Section) -> str:
        return self.text[section.start:section.end]


def load_document(
    path: Path, *, supplementary: Sequence[Path] = (), paper_id: str | None = None,
    headings: Sequence[str] = (),
) -> Document:
    """Read a paper (and its supplementary files) into a Document; `headings`: extra
    section-title words (a domain pack's)."""
    parts = [(_read_file(path), path.name, "main")]
    parts += [(_read_file(extra), extra.name, "supplementary") for extra in supplementary]
    return _assemble(paper_id or make_paper_id(str(path)), parts, headings)


def document_from_text(paper_id: str, text: str, *, source: str = "text",
                       headings: Sequence[str] = ()) -> Document:
    """A Document from text already in memory (Markdown headings or plain-text headings)."""
    return _assemble(paper_id, [(normalise_text(text), source, "main")], headings)


def _read_file(path: Path) -> str:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputError(f"{path}: unsupported paper format {path.suffix or '(none)'!r}; "
                         f"use one of {', '.join(sorted(SUFFIXES))}")
    if not path.is_file():
        raise InputError(f"no such paper file: {path}")
    if kind == "pdf":
        return normalise_text(_pdf_text(path))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    text = normalise_text(text)
    if not text.strip():
        raise InputError(f"{path}: the file is empty")
    return text


def _pdf_text(path: Path) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise InputError(f"{path}: not a readable PDF ({exc})") from None
    if not pages:
        raise InputError(f"{path}: the PDF has no pages")
    text = "\n\n".join(pages)
    if len(text.strip()) < MIN_CHARS_PER_PAGE * len(pages):
        raise InputError(
            f"{path}: the PDF has no extractable text (scanned images?); "
            "run OCR first or give a Markdown/text version of the paper"
        )
    return text


def _assemble(pid: str, parts: Iterable[tuple[str, str, str]], headings: Sequence[str]
              ) -> Document:
    text, sections = "", []
    words = word_headings(tuple(headings))
    for body, source, kind in parts:
        offset = len(text) + (2 if text else 0)
        text = f"{text}\n\n{body}" if text else body
        for title, start, end in split_sections(body, words=words):
            label = f"Supplementary ({source}): {title}" if kind == "supplementary" else title
            sections.append(Section(
                title=label, start=offset + start, end=offset + end, source=source, kind=kind
            ))
    return Document(paper_id=pid, text=text, sections=tuple(sections))


# Pure functions


def normalise_text(text: str) -> str:
    """Line endings, trailing blanks, PDF hyphenation and blank-line runs made canonical.

    >>> normalise_text("hypo-\\nthesis  \\r\\n\\n\\n\\nend")
    'hypothesis\\n\\nend'
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _TRAILING.sub("\n", text)
    text = _HYPHEN_BREAK.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip()


@cache
def word_headings(extra: tuple[str, ...] = ()) -> re.Pattern[str]:
    """The pattern of a short line naming a section: the usual titles plus `extra` words."""
    more = "".join("|" + re.escape(w) for w in extra)
    return re.compile(rf"^({USUAL_HEADINGS}{more})\s*:?$", re.IGNORECASE)


def heading_of(line: str, *, after_break: bool, words: re.Pattern[str] | None = None
               ) -> str | None:
    """The heading title a line announces, or None.

    >>> heading_of("## 2.1 Preparation of sample 1", after_break=False)
    '2.1 Preparation of sample 1'
    >>> heading_of("Sampling", after_break=False), heading_of("Sampling", after_break=False,
    ...                                                       words=word_headings(("sampling",)))
    (None, 'Sampling')
    >>> heading_of("2. Experimental Section", after_break=True)
    '2. Experimental Section'
    >>> heading_of("2. Then heat it", after_break=False) is None
    True
    >>> heading_of("The mixture was stirred.", after_break=True) is None
    True
    """
    stripped = line.strip()
    match = _MD_HEADING.match(stripped)
    if match:
        return match.group(2)
    if not stripped or len(stripped) > MAX_HEADING_CHARS:
        return None
    numbered = after_break and _NUMBERED_HEADING.match(stripped)
    if (words or word_headings()).match(stripped) or numbered:
        return stripped.rstrip(":")
    return None


def split_sections(text: str, *, words: re.Pattern[str] | None = None
                   ) -> list[tuple[str, int, int]]:
    """(title, start, end) spans of the bodies under each heading; text before the first
    heading is a section titled "Front matter" (when not blank).

    >>> split_sections("Title line\\n\\nAbstract\\nWe report.\\n\\n1. Introduction\\nCages.")
    [('Front matter', 0, 10), ('Abstract', 21, 31), ('1. Introduction', 49, 55)]
    """
    spans: list[tuple[str, int, int]] = []
    title, body_start, pos, after_break = "Front matter", 0, 0, True
    for line in text.split("\n"):
        heading = heading_of(line, after_break=after_break, words=words)
        if heading is not None:
            spans.append((title, body_start, pos))
            title, body_start = heading, pos + len(line) + 1
        after_break = heading is not None or not line.strip() or line.rstrip()[-1] in ".!?:"
        pos += len(line) + 1
    spans.append((title, body_start, len(text)))
    return [
        (name, *_trim(text, start, min(end, len(text))))
        for name, start, end in spans
        if text[start:min(end, len(text))].strip()
    ]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def load_documents(papers: Sequence[Path], *, supplementary: Sequence[Path] = (),
                   headings: Sequence[str] = ()) -> list[Document]:
    if supplementary and len(papers) != 1:
        raise InputError("--supplementary needs exactly one paper")
    if not papers:
        raise InputError("give at least one paper (PDF, Markdown or text)")
    return [load_document(p, supplementary=supplementary, headings=headings) for p in papers]
