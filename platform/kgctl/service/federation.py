r"""Which remote endpoints a request would make the server contact (``SERVICE``, ``LOAD``).

pyoxigraph would call them from the server (request forgery): they are refused unless on
``--allow-service``. A text that names either word, or holds an escape, is read by a real
SPARQL parser (kgctl.service.sparql_tree); one it cannot read is refused (fails closed).

>>> remote_targets('SELECT * { SERVICE <http://x.example/sparql> { ?s ?p ?o } }', update=False)
['http://x.example/sparql']
>>> remote_targets('PREFIX ex: <urn:x#> SELECT * { SERVICE <http://y/> {} } # SERVICE <http://b>',
...                update=False)
['http://y/']
>>> remote_targets('LOAD <http://x.example/data.ttl> INTO GRAPH <urn:g>', update=True)
['http://x.example/data.ttl']
"""

from __future__ import annotations

from collections.abc import Collection

from pyparsing import ParseResults
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable

from kgctl.service.execution import HTTP_BAD_REQUEST, HttpProblem
from kgctl.service.sparql_tree import SERVICE, parse_query, parse_update

# most requests name neither word, not even through an escape: no need to parse them
_HINTS = ("service", "load", "\\u")
_REMOTE = {SERVICE: "term", "Load": "iri"}


def remote_targets(sparql: str, *, update: bool) -> list[str]:
    """The endpoint of each ``SERVICE`` / ``LOAD`` of a query or update (a variable as ``?v``);
    400 when the text names one of the words and the parser cannot read it."""
    if not any(hint in sparql.lower() for hint in _HINTS):
        return []
    try:
        tree = parse_update(sparql)[1] if update else parse_query(sparql)
    except HttpProblem as exc:
        raise HttpProblem(HTTP_BAD_REQUEST, "the request names SERVICE or LOAD (or has an "
                          "escape) and could not be read to check which endpoints it contacts "
                          f"(only those allowed with --allow-service): {exc}") from None
    return [_target(node) for node in _remote_nodes(tree)]


def _remote_nodes(tree) -> list[CompValue]:
    found, pending = [], [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, CompValue) and node.name in _REMOTE:
            found.append(node)
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list | tuple | ParseResults):
            pending.extend(node)
    return found[::-1]


def _target(node: CompValue) -> str:
    term = node.get(_REMOTE[node.name])
    if isinstance(term, CompValue):  # a prefixed name: compared as written, it would never match
        raise HttpProblem(HTTP_BAD_REQUEST, "SERVICE and LOAD reach only endpoints allowed with "
                          "--allow-service, written as full IRIs (<...>), not prefixed names")
    return f"?{term}" if isinstance(term, Variable) else str(term)


def check_remote(sparql: str, allowed: Collection[str], *, update: bool) -> None:
    """400 unless every endpoint the request would contact is on the allow-list."""
    if refused := [t for t in remote_targets(sparql, update=update) if t not in allowed]:
        raise HttpProblem(HTTP_BAD_REQUEST, f"this server does not contact {refused[0]} (SERVICE "
                          "and LOAD reach only endpoints the server allows with --allow-service)")
