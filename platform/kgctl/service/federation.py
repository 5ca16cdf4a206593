r"""Which remote endpoints a request would make the server contact (``SERVICE``, ``LOAD``).

pyoxigraph follows ``SERVICE <url>`` and ``LOAD <url>`` with HTTP requests from the server,
so an anonymous query could make it reach any host (server-side request forgery). The service
refuses them unless the endpoint is on the ``--allow-service`` list.

>>> remote_targets('SELECT * { SERVICE <http://x.example/sparql> { ?s ?p ?o } }')
['http://x.example/sparql']
>>> remote_targets('SELECT * { ?s ex:SERVICE "SERVICE <http://a>" } # SERVICE <http://b>')
[]
>>> remote_targets(r'SELECT * { \u0053ERVICE SILENT ?where { ?s ?p ?o } }')
['?where']
>>> remote_targets('LOAD <http://x.example/data.ttl> INTO GRAPH <urn:g>')
['http://x.example/data.ttl']
"""

from __future__ import annotations

from collections.abc import Collection

from kgctl.service.execution import HTTP_BAD_REQUEST, HttpProblem
from kgctl.service.lexer import tokens

_REMOTE_KEYWORDS = {"service", "load"}
# most requests name neither keyword, not even through an escape: no need to tokenise them
_HINTS = ("service", "load", "\\u")


def remote_targets(sparql: str) -> list[str]:
    """The endpoint named after each ``SERVICE`` / ``LOAD`` keyword (a variable as ``?name``)."""
    lowered = sparql.lower()
    if not any(hint in lowered for hint in _HINTS):
        return []
    targets: list[str] = []
    pending = False  # the last keyword was SERVICE or LOAD: the next IRI/variable is its target
    for token in tokens(sparql):
        word = token.text.lower()
        if pending and token.kind == "word" and word == "silent":
            continue
        if pending:  # an IRI, or a variable / prefixed name (never on an allow-list of IRIs)
            targets.append(token.text[1:-1] if token.kind == "iri" else token.text)
        pending = token.kind == "word" and word in _REMOTE_KEYWORDS
    return targets


def check_remote(sparql: str, allowed: Collection[str]) -> None:
    """400 unless every endpoint the request would contact is on the allow-list."""
    refused = [t for t in remote_targets(sparql) if t not in allowed]
    if refused:
        raise HttpProblem(HTTP_BAD_REQUEST, f"this server does not contact {refused[0]} "
                          "(SERVICE and LOAD reach only endpoints the server allows with "
                          "--allow-service)")
