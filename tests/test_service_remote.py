"""SERVICE / LOAD targets and the protocol's update dataset, found by rdflib's SPARQL grammar
(in process, and held to what pyoxigraph calls on generated queries; test_service_limits.py
sends such requests to a server that must not call out)."""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pyoxigraph import Store

from kgctl.service import sparql_tree
from kgctl.service.execution import HttpProblem
from kgctl.service.federation import check_remote
from kgctl.service.update_dataset import with_dataset

T = "http://127.0.0.1:9/sparql"
QUERIES = [
    "SELECT * { SERVICE <T> { ?s ?p ?o } }",
    "SELECT * { \\u0053ERVICE SILENT <T> { ?s ?p ?o } }",
    "SELECT * { \\U00000053ERVICE <T> { ?s ?p ?o } }",
    "SELECT * { SERVICE <\\u0068ttp://127.0.0.1:9/sparql> { ?s ?p ?o } }",
    "SELECT * { BIND(<T> AS ?e) SERVICE ?e { ?s ?p ?o } }",
    "PREFIX t: <T> SELECT * { SERVICE t: { ?s ?p ?o } }",
    "BASE <T> SELECT * { SERVICE <> { ?s ?p ?o } }",
    "PREFIX ex: <urn:x#> SELECT * { ?s ex:a\\# ?o . SERVICE <T> { ?s ?p ?o } }",
    "PREFIX ex: <urn:x#> SELECT * { ?s ex:a\\' ?o . SERVICE <T> { ?s ?p ?o } } #'",
    "PREFIX ex: <urn:x#> SELECT * { ?s ex:a\\\" ?o . SERVICE <T> { ?s ?p ?o } }",
    "PREFIX ex: <urn:x#> SELECT * { ?s ex:\\#a ?o . SERVICE <T> { ?s ?p ?o } }",
    "SELECT * { ?s ?p \"\\\"\" . SERVICE <T> { ?s ?p ?o } }",
    "SELECT * { ?s ?p '''a''' . SERVICE <T> { ?s ?p ?o } }",
    "SELECT * { # <\n SERVICE <T> { ?s ?p ?o } }",
    # pyoxigraph decodes escapes inside strings only: \u0022 there is a quote it reads as text,
    # a pre-pass would take it for the string's end and hide what follows in a new string
    "SELECT * { ?s ?p \"a\\u0022@en, \" . SERVICE <T> { ?s ?p ?o } ?s ?p \", \\u0022\" }",
    # (this one made the server POST to <T> past the previous check, rdflib's own decoding)
    "SELECT * { OPTIONAL { ?s ?p \"a\\u0022@en, \" } . SERVICE <T> { ?s ?p ?o } "
    "OPTIONAL { ?s ?p \", \\u0022\" } }",
    "SELECT * { ?s ?p ?o . # \\u000A1234 ?x ?y . SERVICE <T> { ?a ?b ?c }\n}",
    "SELECT * { ?s ?p ?o . # \\u000a00010 ?x ?y . SERVICE <T> { ?a ?b ?c }\n}",
    "SELECT * { \\u005Cu0053ERVICE <T> { ?s ?p ?o } }",
    # a comment ends at CR for pyoxigraph, at LF only for rdflib's grammar (this one made the
    # server POST to <T> past the previous check)
    "SELECT * { BIND(1 AS ?o) # x\r SERVICE <T> { ?a ?b ?c } \n }",
    "SELECT * { { SELECT * { { SELECT * { SERVICE <T> { ?s ?p ?o } } } } } }",
    "SELECT * { OPTIONAL { SERVICE <T> { ?s ?p ?o } } }",
    "SELECT * { FILTER EXISTS { SERVICE <T> { ?s ?p ?o } } }",
    "SELECT * { FILTER NOT EXISTS { SERVICE <T> { ?s ?p ?o } } }",
    "SELECT * { MINUS { SERVICE <T> { ?s ?p ?o } } }",
    "SELECT * { SERVICE <T> " + "{" * 500 + "}" * 500 + " }",  # past the reader's recursion
    "SELECT * { { } UNION { SERVICE <T> { ?s ?p ?o } } }",
    "SELECT * { GRAPH ?g { SERVICE <T> { ?s ?p ?o } } }",
    "ASK { SERVICE <T> { ?s ?p ?o } }",
    "CONSTRUCT { ?s ?p ?o } WHERE { SERVICE <T> { ?s ?p ?o } }",
    "DESCRIBE ?s WHERE { SERVICE <T> { ?s ?p ?o } }",
    "SELECT * { VALUES ?e { <T> } SERVICE ?e { ?s ?p ?o } }",
]
UPDATES = [
    "LOAD <T>",
    "LOAD SILENT <T> INTO GRAPH <urn:g>",
    "\\u004cOAD <T>",
    "PREFIX t: <T> LOAD t:",
    "INSERT { ?s ?p ?o } WHERE { SERVICE <T> { ?s ?p ?o } }",
    "INSERT DATA { <urn:a> <urn:b> 'x' } ; LOAD <T>",
    "PREFIX ex: <urn:x#> INSERT { ex:a\\# ex:p 1 } WHERE {} ; LOAD SILENT <T> INTO GRAPH <urn:g>",
    "INSERT DATA { <urn:a> <urn:b> \"\\\"\" } ; LOAD <T> # \"",
    "DELETE { ?s ?p ?o } WHERE { { SELECT * { SERVICE <T> { ?s ?p ?o } } } }",
]


@pytest.mark.parametrize("query", QUERIES)
def test_every_form_of_service_is_refused_unless_allowed(query: str) -> None:
    text = query.replace("<T>", f"<{T}>")
    with pytest.raises(HttpProblem) as refused:
        check_remote(text, (), update=False)
    assert refused.value.status == 400 and "--allow-service" in str(refused.value)


@pytest.mark.parametrize("update", UPDATES)
def test_every_form_of_load_and_service_in_updates_is_refused_unless_allowed(
        update: str) -> None:
    with pytest.raises(HttpProblem) as refused:
        check_remote(update.replace("<T>", f"<{T}>"), (), update=True)
    assert refused.value.status == 400


RDFS = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "


@pytest.mark.parametrize("text, update", [
    (QUERIES[0], False), (QUERIES[3], False), (UPDATES[1], True),
    # a "#" before the SERVICE on its line (rdflib's own SERVICE node could not read these)
    (RDFS + "SELECT * { SERVICE <T> { ?s rdfs:label ?l } }", False),
    ("SELECT * { ?s ?p '#1' . SERVICE <T> { ?s ?p ?o } }", False),
    (RDFS + "INSERT { ?s ?p ?o } WHERE { SERVICE <T> { ?s rdfs:label ?o } }", True)])
def test_an_allowed_endpoint_passes(text: str, update: bool) -> None:
    check_remote(text.replace("<T>", f"<{T}>"), (T,), update=update)


def test_the_grammar_is_ready_at_import_so_forked_workers_do_not_ready_it() -> None:
    """pyparsing readies a grammar at its first parse (60-150 ms in each fresh worker, before);
    a worker is forked from a process that imported the check."""
    assert sparql_tree._QUERY.streamlined and sparql_tree._UNIT.streamlined
    check_remote(f"SELECT * {{ SERVICE <{T}> {{ ?s a:b 'c' }} }}", (T,), update=False)


@pytest.mark.parametrize("text", [
    "PREFIX t: <http://127.0.0.1:9/> SELECT * { SERVICE t:sparql {} }",
    "PREFIX : <T> SELECT * { SERVICE : {} }",
    "PREFIX : <T> LOAD :"])
def test_a_prefixed_endpoint_is_refused_with_the_form_that_passes(text: str) -> None:
    with pytest.raises(HttpProblem, match="full IRIs"):
        check_remote(text.replace("<T>", f"<{T}>"), (T,), update="LOAD" in text)


@pytest.mark.parametrize("text", [
    "SELECT * { ?s <urn:p> \"SERVICE <http://a>\" } # SERVICE <http://b>",
    "PREFIX ex: <urn:x#> SELECT * { ?s ex:a\\# ?o } # SERVICE <http://b>",
    "SELECT * { ?s ?p \"caf\\u00e9\" }",
])
def test_words_in_strings_comments_and_plain_escapes_are_inert(text: str) -> None:
    check_remote(text, (), update=False)


# lexically tricky pieces, for generated queries: strings of every quoting holding escapes,
# quotes, comment and IRI marks; escaped local names; comments ended by CR or LF; \u escapes
PIECES = ["'", '"', "#", "<", ">", "{", "}", " ", "a", "\\\"", "\\'", "\\\\", "\\n", "\\r",
          "\\u0041", "\\u00e9", "\\u0020", "\\u007B", "\\u007D", "\u2028", "\u00a0",
          "SERVICE <T> { ?a ?b ?c }"]
LOCAL_NAMES = ["a\\#", "a\\'", "\\#a", "a\\.b", "a%23", "a\\-", "a\\~", "\\$a", "a\\,", "a\\;",
               "a\\/", "a\\?", "a\\@", "a\\(", "\\_a", "a"]
QUOTES = ["'", '"', "'" * 3, '"' * 3]
GENERATED = 200


def generated_text(rng: random.Random, target: str, *, update: bool) -> str:
    """One query (or update) with a SERVICE (or a LOAD) to `target` among tricky terms and
    comments."""
    def text(quote: str) -> str:
        pieces = [p for p in PIECES + ["'", '"', "\n"] * (len(quote) == 3) if p != quote]
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))

    def term() -> str:
        kind = rng.randrange(len(QUOTES) + 3)
        if kind < len(QUOTES):
            return QUOTES[kind] + text(QUOTES[kind]) + QUOTES[kind]
        return ["ex:" + rng.choice(LOCAL_NAMES), "<urn:a#b>", "?x"][kind - len(QUOTES)]

    def gap() -> str:
        return rng.choice([" ", "\n", "\t", "\r", "#" + text("") + rng.choice(["\n", "\r"])])

    keyword = rng.choice(["SERVICE", "service", "\\u0053ERVICE", "SERVIC\\u0045"])
    parts = [rng.choice([f"OPTIONAL {{ ?s ?p {term()} }}", f"?s ?p {term()} .",
                         f"BIND({term()} AS ?v{n})"]) for n in range(rng.randint(1, 4))]
    parts.insert(rng.randint(0, len(parts)), f"{keyword}{gap()}<{target}>{gap()}{{ ?s ?p ?o }}")
    where = f"{{{gap()}" + gap().join(parts) + f"{gap()}}}"
    load = rng.choice(["LOAD", "load", "\\u004cOAD"])
    body = rng.choice([f"INSERT {{ ?s ?p ?o }} WHERE {where}",
                       f"INSERT DATA {{ <urn:a> <urn:b> {term()} }} ;{gap()}{load}{gap()}"
                       f"<{target}>"]) if update else f"SELECT * {where}"
    return f"PREFIX ex: <urn:x#>{gap()}{body}".replace("<T>", f"<{target}>")


@contextmanager
def listening() -> Iterator[tuple[str, list[int]]]:
    """An endpoint URL and the count of connections made to it (each closed at once)."""
    made = [0]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def accept() -> None:
            while True:
                try:
                    listener.accept()[0].close()
                except OSError:  # closed: the test is over
                    return
                made[0] += 1

        threading.Thread(target=accept, daemon=True).start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/sparql", made
        listener.shutdown(socket.SHUT_RDWR)


@pytest.mark.parametrize("update", [False, True])
def test_no_generated_request_that_passes_the_check_makes_pyoxigraph_call_out(
        update: bool) -> None:
    """Differential: of GENERATED seeded queries (or updates), each holding one SERVICE (or
    LOAD), every one the check lets through is run by pyoxigraph, which must not contact the
    endpoint; the check names the endpoint of three in four at least."""
    rng, store, seen = random.Random(29), Store(), {"passed": 0, "found": 0, "unread": 0}
    with listening() as (target, made):
        for _ in range(GENERATED):
            text = generated_text(rng, target, update=update)
            try:
                check_remote(text, (), update=update)
            except HttpProblem as refused:
                seen["unread" if "could not be read" in str(refused) else "found"] += 1
                continue
            seen["passed"] += 1
            before = made[0]
            try:
                store.update(text) if update else list(store.query(text))
            except (SyntaxError, OSError, RuntimeError):
                pass
            assert made[0] == before, text
    assert seen["found"] >= 0.75 * GENERATED, seen


def run(update: str) -> set[str]:
    """The graphs an update wrote into, run by pyoxigraph on a store with one triple per graph
    (<urn:s> <urn:in> <graph>) in urn:g1 and urn:g2."""
    store = Store()
    store.update("INSERT DATA { GRAPH <urn:g1> { <urn:s> <urn:in> <urn:g1> } "
                 "GRAPH <urn:g2> { <urn:s> <urn:in> <urn:g2> } }")
    store.update(update)
    return {str(q.object.value) for q in store.quads_for_pattern(None, None, None, None)
            if str(q.predicate.value) == "urn:saw"}


@pytest.mark.parametrize("update, seen", [
    ("INSERT { ?s <urn:saw> ?g } WHERE { ?s <urn:in> ?g }", {"urn:g1"}),
    ("PREFIX ex: <urn:x/> INSERT { ?s <urn:saw> ?g . ?s ex:a\\# 'WHERE' } "
     "WHERE { ?s <urn:in> ?g } # WHERE", {"urn:g1"}),
    ("INSERT { ?s <urn:saw> ?g } \\u0057HERE { ?s <urn:in> ?g }", {"urn:g1"}),
    ("INSERT DATA { <urn:x> <urn:y> \" } WHERE {\" } ; "
     "INSERT { ?s <urn:saw> ?g } WHERE { { SELECT * WHERE { ?s <urn:in> ?g } } }", {"urn:g1"}),
])
def test_the_protocol_dataset_goes_before_each_where_and_nowhere_else(update: str,
                                                                      seen: set[str]) -> None:
    assert run(with_dataset(update, ["urn:g1"], [])) == seen


@pytest.mark.parametrize("update", [
    "WITH <urn:g2> INSERT { ?s <urn:saw> ?g } WHERE { ?s <urn:in> ?g }",
    "INSERT { ?s <urn:saw> ?g } USING <urn:g2> WHERE { ?s <urn:in> ?g }",
    "INSERT { ?s <urn:saw> ?g } \\u0055SING <urn:g2> WHERE { ?s <urn:in> ?g }",
    "INSERT DATA { <urn:a> <urn:b> 1 } ; with <urn:g2> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
])
def test_an_update_with_its_own_dataset_and_the_protocol_one_is_refused(update: str) -> None:
    with pytest.raises(HttpProblem, match="USING/WITH"):
        with_dataset(update, ["urn:g1"], [])
