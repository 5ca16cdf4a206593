r"""The few lexical facts the service needs from a SPARQL text, read as the grammar reads it.

``\u`` escapes are decoded first (SPARQL applies them before parsing), then comments, strings
and IRIs are taken whole, so a keyword inside them is inert and an escaped one is not.

>>> [t.text for t in tokens('ASK { ?s ex:p "WHERE" } # WHERE\nSERVICE <urn:x>')]
['ASK', '{', '?s', 'ex:p', '}', 'SERVICE', '<urn:x>']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_TOKEN = re.compile(
    r"""(?P<skip>\#[^\n\r]*|'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
        |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
      |(?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
      |(?P<word>[?$]?[A-Za-z_][\w\-.]*(?::[\w\-.:%]*)?|:[\w\-.:%]*)
      |(?P<brace>[{}])""",
    re.VERBOSE)


class Token(NamedTuple):
    kind: str  # word, iri or brace
    text: str
    start: int  # offset in the decoded text


def decode(sparql: str) -> str:
    r"""The text with its ``\uXXXX`` / ``\UXXXXXXXX`` escapes decoded."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), sparql)


def tokens(sparql: str) -> Iterator[Token]:
    """Words, IRIs and braces of the decoded text (comments and strings skipped)."""
    for match in _TOKEN.finditer(decode(sparql)):
        if match.lastgroup != "skip":
            yield Token(match.lastgroup or "", match.group(), match.start())
