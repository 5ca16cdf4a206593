"""The text the agent sends besides the paper: a step's request, the notes it adds to a
conversation, and how a conversation is shrunk to fit the context window."""

from __future__ import annotations

from typing import Any

from kgctl.agent.budget import Piece
from kgctl.agent.tools import SEARCH_TOOL
from kgctl.compiler.plan import PlanStep
from kgctl.papers.ingest import Document, Section

ELIDED = "[result elided to fit the context window; call the tool again if you need it]"


def step_sections(document: Document, step: PlanStep) -> list[Section]:
    """The sections a step reads: those whose title has one of its read words, else all."""
    wanted = [s for s in document.sections
              if any(word.lower() in s.title.lower() for word in step.read)]
    return wanted or list(document.sections)


def step_header(document: Document, step: PlanStep) -> str:
    """What a plan step asks for, before the piece of the paper."""
    return (
        f"Paper {document.paper_id}. Plan step: {step.title}.\nGoal: {step.goal}\n"
        f"Call the tools to record what the paper states; pass an evidence quote with its section "
        f"and character offsets when you can; use {SEARCH_TOOL} to find passages. "
        "Reply without tool calls when this step is complete."
    )


def piece_request(header: str, piece: Piece, number: int, total: int) -> str:
    """The user turn of one conversation: the step's request and one piece of the paper.

    >>> piece_request("Do X.", Piece(0, "[section: A]\\nabc"), 2, 3).splitlines()[:2]
    ['Do X.', 'This is part 2 of 3 of the paper; record what this part states.']
    """
    part = (f"\nThis is part {number} of {total} of the paper; record what this part states."
            if total > 1 else "")
    return f"{header}{part}\n\n{piece.text}"


def cut_off_note(max_tokens: int) -> str:
    return (f"Your reply was cut off at the limit of {max_tokens} tokens and was not used. "
            "Make fewer tool calls per reply and keep them short.")


def elide(conversation: list[dict[str, Any]]) -> bool:
    """Replace the text of all but the last tool result with a short note (in place); False
    when there was nothing left to elide.

    >>> conv = [{"role": "tool", "content": "long"}, {"role": "tool", "content": "last"}]
    >>> elide(conv), [m["content"][:6] for m in conv], elide(conv)
    (True, ['[resul', 'last'], False)
    """
    tools = [i for i, m in enumerate(conversation) if m["role"] == "tool"][:-1]
    changed = False
    for i in tools:
        if conversation[i]["content"] != ELIDED:
            conversation[i] = {**conversation[i], "content": ELIDED}
            changed = True
    return changed


def verification_request(step: PlanStep, review: str) -> str:
    return (
        "Verification pass. These are the calls you made in this step, with their evidence:\n"
        f"{review}\n\nCheck each against the paper. Rules:\n{step.verify}\n"
        "Correct any mistake with the repair tools; reply without tool calls when all is right."
    )
