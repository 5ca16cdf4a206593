"""Variable bindings for endpoints that lack SEP-0007 substitution: one single-variable VALUES
block per variable, injected as the first elements of the WHERE group, so FILTERs and BINDs of
that group see the values. (One multi-variable block is standard too, but Virtuoso 7 cannot
compile it in some queries; single-variable blocks compile everywhere.)

The values must already be SPARQL terms (from ``kgctl.store.sparql.term_to_sparql``). A small
lexer skips comments, strings, IRIs, variables and prefixed names, so braces or keywords inside
them are never taken for the group.

>>> inject_values('SELECT ?where WHERE { ?where <p> ?l }', {"where": "<http://a>"})
'SELECT ?where WHERE { VALUES ?where { <http://a> } ?where <p> ?l }'
>>> inject_values('CONSTRUCT { ?x <q> "{" } WHERE { ?x <p> ?y }', {"y": '"1"'})
'CONSTRUCT { ?x <q> "{" } WHERE { VALUES ?y { "1" } ?x <p> ?y }'
>>> inject_values('ASK { ?x ?p ?o }', {"x": "<http://a>", "o": '"b"'})
'ASK { VALUES ?x { <http://a> } VALUES ?o { "b" } ?x ?p ?o }'
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache

from kgctl.errors import InputError

_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
               |"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<var>[?$]\w+)
  | (?P<pname>[\w.-]*:[\w.:%-]*)
  | (?P<open>\{)
  | (?P<close>\})
  | (?P<word>[A-Za-z_]\w*)
  | (?P<space>\s+)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
# groups that start the pattern when there is no WHERE keyword
_FORMS = {"SELECT", "ASK", "DESCRIBE"}
# short forms whose WHERE group holds only triple patterns: VALUES cannot go there
_SHORT_FORMS = {"CONSTRUCT", "DELETE"}
_VARNAME = re.compile(r"^\w+$")


def _tokens(text: str) -> Iterator[tuple[str, str, int]]:
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        if kind not in ("space", "comment"):
            yield kind, match.group().upper(), match.end()


@lru_cache(maxsize=256)  # the same few query texts are bound again and again
def _pattern_start(text: str) -> int:
    """Offset just after the opening brace of the top-level WHERE group."""
    depth, form, after_where, previous = 0, None, False, None
    for kind, value, end in _tokens(text):
        if kind == "word" and depth == 0:
            if value == "WHERE":
                if previous in _SHORT_FORMS:
                    raise InputError(f"bindings need the long form of {previous} ... WHERE")
                after_where = True
            elif form is None and value in _FORMS:
                form = value
        elif kind == "open":
            if depth == 0 and (after_where or form is not None):
                return end
            depth += 1
        elif kind == "close":
            depth -= 1
        previous = value if kind == "word" else None
    raise InputError("cannot apply bindings: no WHERE group found")


def inject_values(sparql: str, terms: Mapping[str, str]) -> str:
    """Insert ``VALUES ?a { ta } VALUES ?b { tb }`` at the start of the WHERE group."""
    for name in terms:
        if not _VARNAME.match(name):
            raise InputError(f"invalid variable name in bindings: {name!r}")
    cut = _pattern_start(sparql)
    blocks = "".join(f" VALUES ?{name} {{ {term} }}" for name, term in terms.items())
    return f"{sparql[:cut]}{blocks}{sparql[cut:]}"


def query_form(sparql: str) -> str:
    """The query form keyword (SELECT, ASK, CONSTRUCT, DESCRIBE), outside prologue and strings.

    >>> query_form('PREFIX ex: <http://select/> # ASK\\nCONSTRUCT { ?s ex:p "SELECT" } WHERE {}')
    'CONSTRUCT'
    """
    for kind, value, _end in _tokens(sparql):
        if kind == "word" and value in (*_FORMS, "CONSTRUCT"):
            return value
    raise InputError("not a SPARQL query: no SELECT, ASK, CONSTRUCT or DESCRIBE")
