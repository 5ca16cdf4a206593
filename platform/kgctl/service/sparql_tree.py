r"""The parse tree of a query or update, read by rdflib's SPARQL grammar, once per text.

Escapes are decoded first, as the grammar says (docs/service.md, "SERVICE and LOAD"); the
``WHERE`` of each ``DELETE/INSERT ... WHERE`` keeps its offset (kgctl.service.update_dataset).

>>> text, tree = parse_update(r"INSERT { ?s ?p '\u00e9' } WHERE { ?s ?p ?o }")
>>> text, tree["request"][0]["whereAt"]
("INSERT { ?s ?p 'é' } WHERE { ?s ?p ?o }", 21)
>>> parse_query(r'SELECT * { ?s ?p "a\u0022" }')  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
kgctl.service.execution.HttpProblem: ... escape \u0022 makes a character that delimits tokens...
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache

from pyparsing import Forward, Optional, ParseBaseException, ZeroOrMore, rest_of_line
from rdflib.plugins.sparql import parser as sparql
from rdflib.plugins.sparql.parserutils import Comp, CompValue, Param, ParamList

from kgctl.service.execution import HTTP_BAD_REQUEST, HttpProblem

_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_DELIMITERS = frozenset("\"'\\<>#\n\r")

# rdflib's [29] Update, [30] Update1 and [41] Modify, built from its own productions, with the
# offset of Modify's WHERE kept
_WHERE = sparql.Keyword("WHERE").add_parse_action(lambda _text, at, _tokens: at)
_MODIFY = Comp("Modify", Optional(sparql.Keyword("WITH") + Param("withClause", sparql.iri))
               + (Param("delete", sparql.DeleteClause)
                  + Optional(Param("insert", sparql.InsertClause))
                  | Param("insert", sparql.InsertClause))
               + ZeroOrMore(ParamList("using", sparql.UsingClause))
               + Param("whereAt", _WHERE) + Param("where", sparql.GroupGraphPattern))
_UPDATE = Forward()
_UPDATE <<= ParamList("prologue", sparql.Prologue) + Optional(ParamList(
    "request", sparql.Load | sparql.Clear | sparql.Drop | sparql.Add | sparql.Move
    | sparql.Copy | sparql.Create | sparql.InsertData | sparql.DeleteData
    | sparql.DeleteWhere | _MODIFY) + Optional(";" + _UPDATE))
_UNIT = Comp("Update", _UPDATE).ignore("#" + rest_of_line)
# rdflib's SERVICE node searches the text for its own source again, and misses it past a "#" of
# an IRI or string on its line (taken for a comment): a copy of the grammar with it renamed
SERVICE, _COPIES = "Service", {}
sparql.Query.streamline(), _UNIT.streamline()  # as a first parse would (the copy costs less)
_QUERY, _UNIT = copy.deepcopy((sparql.Query, _UNIT), _COPIES)
_COPIES[id(sparql.ServiceGraphPattern)].set_name(SERVICE)  # deepcopy's memo: id -> copy
# a first parse (its regexes compiled) here, not in each forked worker: 60-150 ms before
_QUERY.parse_string("SELECT * { SERVICE <urn:x> { ?s a:b 'c', 1, \"d\"@en } }")


def _decode(match: re.Match) -> str:
    char = chr(int(match.group(1) or match.group(2), 16))
    if char in _DELIMITERS:
        raise ValueError(f"escape {match.group()} makes a character that delimits tokens; "
                         "write it plainly")
    return char


@lru_cache(maxsize=16)
def _parse(sparql_text: str, update: bool) -> tuple[str, object]:
    try:
        text = _ESCAPE.sub(_decode, sparql_text)
        grammar = _UNIT if update else _QUERY
        # a comment ends at CR too (pyoxigraph ends it there; rdflib's only at LF)
        return text, grammar.parse_string(text.replace("\r", "\n"), parse_all=True)
    except (ParseBaseException, ValueError, TypeError, RecursionError) as exc:
        raise HttpProblem(HTTP_BAD_REQUEST, f"the request could not be read: {exc}") from None


def parse_query(query: str) -> object:
    """The parse tree of a query; 400 when rdflib cannot read it."""
    return _parse(query, False)[1]


def parse_update(update: str) -> tuple[str, CompValue]:
    """The update with its escapes decoded (offsets refer to it) and its parse tree."""
    text, tree = _parse(update, True)
    return text, tree[0]
