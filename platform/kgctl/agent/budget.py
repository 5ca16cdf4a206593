"""What a plan step costs in a model's context window, and the paper in pieces that fit.

Counts use `kgctl.tokens` (o200k_base). A served model's own tokenizer and chat template count
differently, so estimates are scaled by TOKEN_SAFETY and padded per message; a server's context
overflow answer (with its own count) then shrinks the next try (see `kgctl.agent.loop`).

>>> from kgctl.papers.ingest import document_from_text
>>> doc = document_from_text("p", "# Methods\\n" + "Cu was added to the flask. " * 60)
>>> pieces = paper_pieces(doc, doc.sections, budget=150)
>>> len(pieces) > 1, all(estimate_text(p.text) <= 150 for p in pieces)
(True, True)
>>> head, body = pieces[1].text.split("\\n", 1)
>>> head
'[section: Methods | offsets 388-792]'
>>> doc.text[388:792] == body, pieces[1].start
(True, 388)
>>> paper_pieces(doc, doc.sections, budget=150, start_at=388)[0] == pieces[1]
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from kgctl.papers.ingest import Document, Section
from kgctl.tokens import count_tokens

TOKEN_SAFETY = 1.25  # other tokenizers may count a quarter more tokens than o200k_base
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds per message
TOOLS_OVERHEAD = 64  # template text around the tool list
MAX_PIECE_TOKENS = 15_000  # a larger paper is shown in several pieces whatever the window
PIECE_SHARE = 0.5  # of the room beside the step's fixed cost: the rest is for the conversation
MIN_PIECE_TOKENS = 200  # less room than this for the paper: the step cannot fit
_BREAKS = ("\n\n", "\n", ". ", " ")  # where a section is cut, best first


def estimate_text(text: str) -> int:
    """Tokens a served model may need for ``text`` (o200k_base count, scaled).

    >>> estimate_text("hello world")
    3
    """
    return math.ceil(count_tokens(text) * TOKEN_SAFETY)


def estimate(messages: Sequence[dict[str, Any]], specs: Sequence[dict[str, Any]] = ()) -> int:
    """Tokens of a request's messages and tool specifications, as a served model may count.

    >>> estimate([{"role": "user", "content": "hello world"}])
    11
    """
    total = TOOLS_OVERHEAD + estimate_text(json.dumps(list(specs))) if specs else 0
    for message in messages:
        content = message.get("content")
        total += MESSAGE_OVERHEAD + (estimate_text(content) if isinstance(content, str) else 0)
        if message.get("tool_calls"):
            total += estimate_text(json.dumps(message["tool_calls"]))
    return total


def piece_budget(window: int | None, *, fixed: int, reply: int) -> int:
    """Tokens of paper text per piece: a share of what the window leaves beside the step's fixed
    cost and the reply, capped (0 when that is less than the smallest useful piece).

    >>> piece_budget(8192, fixed=5000, reply=1024), piece_budget(8192, fixed=7800, reply=1024)
    (1084, 0)
    >>> piece_budget(None, fixed=5000, reply=1024)
    15000
    """
    if window is None:
        return MAX_PIECE_TOKENS
    room = int((window - fixed - reply) * PIECE_SHARE)
    return min(room, MAX_PIECE_TOKENS) if room >= MIN_PIECE_TOKENS else 0


def shrunk_budget(budget: int, *, sent: int, fixed: int, reply: int, prompt_tokens: int | None,
                  context: int | None) -> int:
    """A smaller piece budget after the server refused a request of ``sent`` estimated tokens as
    ``prompt_tokens`` in a ``context`` window (numbers unknown: half); 0 when no piece fits.

    >>> shrunk_budget(1000, sent=6000, fixed=5000, reply=1024, prompt_tokens=9000, context=8192)
    0
    >>> shrunk_budget(1000, sent=6000, fixed=4000, reply=512, prompt_tokens=8400, context=8192)
    742
    >>> shrunk_budget(1000, sent=6000, fixed=4000, reply=512, prompt_tokens=None, context=None)
    500
    """
    if prompt_tokens and context:
        scale = prompt_tokens / sent  # the server's tokens per estimated token
        room = ((context - reply) / scale - fixed) * PIECE_SHARE
        new = int(min(room, budget * 0.8))
    else:
        new = budget // 2
    return new if new >= MIN_PIECE_TOKENS else 0


class Piece(NamedTuple):
    start: int  # offset into the document where the piece begins
    text: str


def paper_pieces(document: Document, sections: Sequence[Section], *, budget: int,
                 start_at: int = 0) -> list[Piece]:
    """The sections' text from offset ``start_at`` on, in pieces of at most ``budget`` estimated
    tokens, in order; each block names its section and character offsets (for evidence), long
    sections are cut at paragraph, line, sentence or word breaks."""
    blocks = [block for s in sections if s.end > start_at
              for block in _blocks(document, s, budget, max(s.start, start_at))]
    pieces: list[Piece] = []
    current: list[str] = []
    first, size = 0, 0
    for start, block, tokens in blocks:
        if current and size + tokens > budget:
            pieces.append(Piece(first, "\n\n".join(current)))
            current, size = [], 0
        if not current:
            first = start
        current.append(block)
        size += tokens
    if current:
        pieces.append(Piece(first, "\n\n".join(current)))
    return pieces


def _blocks(document: Document, section: Section, budget: int, start: int
            ) -> list[tuple[int, str, int]]:
    text = document.text[start:section.end]
    start += len(text) - len(text.lstrip())
    text = text.strip()
    out: list[tuple[int, str, int]] = []
    while text:
        cut = _fit(section.title, text, start, budget)
        chunk, rest = text[:cut], text[cut:]
        block = _block(section.title, start, chunk.rstrip())
        out.append((start, block, estimate_text(block)))
        start += cut + (len(rest) - len(rest.lstrip()))
        text = rest.lstrip()
    return out


def _block(title: str, start: int, text: str) -> str:
    return f"[section: {title} | offsets {start}-{start + len(text)}]\n{text}"


def _fit(title: str, text: str, start: int, budget: int) -> int:
    """The length of the longest head of ``text`` ending at a break whose block fits."""
    if estimate_text(_block(title, start, text)) <= budget:
        return len(text)
    limit = len(text)
    while limit > 1:
        limit = max(1, int(limit * 0.7))
        head = text[:limit]
        cut = next((head.rfind(b) + len(b) for b in _BREAKS if head.rfind(b) > 0), limit)
        if estimate_text(_block(title, start, text[:cut])) <= budget:
            return cut
    return 1
