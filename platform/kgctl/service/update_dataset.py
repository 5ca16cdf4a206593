"""Protocol dataset parameters of an update (``using-graph-uri``, ``using-named-graph-uri``).

They act as ``USING`` / ``USING NAMED`` clauses of every ``DELETE/INSERT ... WHERE`` operation;
an update that names its own dataset (``USING``, ``WITH``) as well is a conflict (400). The
clauses are written from validated IRIs (pyoxigraph's N-Triples form of a ``NamedNode``).

>>> with_dataset("INSERT { ?s a <urn:t> } WHERE { ?s a <urn:u> }", ["urn:g"], [])
'INSERT { ?s a <urn:t> } USING <urn:g> WHERE { ?s a <urn:u> }'
>>> with_dataset("WITH <urn:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", [], ["urn:n"])
Traceback (most recent call last):
...
kgctl.service.execution.HttpProblem: the update names its dataset (USING/WITH) and the request \
does too (using-graph-uri/using-named-graph-uri); give it one way
"""

from __future__ import annotations

from collections.abc import Sequence

from kgctl.service.execution import HTTP_BAD_REQUEST, HttpProblem, iri
from kgctl.service.lexer import decode, tokens


def with_dataset(update: str, using: Sequence[str], using_named: Sequence[str]) -> str:
    """`update` with the protocol's dataset added to each operation that reads a dataset."""
    if not using and not using_named:
        return update
    clauses = " ".join([f"USING {iri(g)}" for g in using]
                       + [f"USING NAMED {iri(g)}" for g in using_named]) + " "
    text, depth, previous, cuts = decode(update), 0, "", []
    for token in tokens(update):
        word = token.text.lower() if token.kind == "word" else ""
        if token.kind == "brace":
            depth += 1 if token.text == "{" else -1
        elif depth == 0 and word in ("using", "with"):
            raise HttpProblem(HTTP_BAD_REQUEST, "the update names its dataset (USING/WITH) and "
                              "the request does too (using-graph-uri/using-named-graph-uri); "
                              "give it one way")
        elif depth == 0 and word == "where" and previous == "}":
            cuts.append(token.start)
        previous = token.text if token.kind == "brace" else word
    for cut in reversed(cuts):
        text = text[:cut] + clauses + text[cut:]
    return text
