"""Property tests: terms serialised by term_to_sparql (and bindings injected as VALUES) reach
SPARQL intact whatever they contain: quotes, newlines, backslashes, braces, #, unicode."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Quad, Triple
from store_helpers import OxigraphServer

from kgctl.errors import InputError
from kgctl.store import EmbeddedStore
from kgctl.store.remote import RemoteStore
from kgctl.store.sparql import data_update, term_to_sparql

LOCAL_EXAMPLES = 300
REMOTE_EXAMPLES = 40
NASTY = list('"\'\\\n\r\t{}#<>?$;.') + ['"""', "'''", "\\u0022", "\x00", "\x7f", "é", "𝔘", "\u2028"]
text = st.lists(st.one_of(st.sampled_from(NASTY), st.characters(blacklist_categories=("Cs",))),
                max_size=30).map("".join)
DATATYPES = [None, "http://www.w3.org/2001/XMLSchema#string", "https://example.org/dt#x{y}"]


@st.composite
def literals(draw) -> Literal:
    value = draw(text)
    language = draw(st.sampled_from([None, "en", "de-CH"]))
    if language is not None:
        return Literal(value, language=language)
    datatype = draw(st.sampled_from(DATATYPES))
    if datatype is None or "{" in datatype:  # braces are not allowed in IRIs
        return Literal(value)
    return Literal(value, datatype=NamedNode(datatype))


@st.composite
def named_nodes(draw) -> NamedNode:
    tail = draw(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs")),
                        max_size=20))
    try:
        return NamedNode("https://example.org/" + tail)
    except ValueError:
        assume(False)


terms = st.one_of(literals(), named_nodes())
P = NamedNode("https://example.org/p")
G = NamedNode("https://w3id.org/kgctl/paper/px")
# braces, a comment and a string with braces before the pattern, to trip a naive injector
TRICKY_QUERY = ('PREFIX ex: <https://example.org/> # a comment { with a brace\n'
                'SELECT ?s (CONCAT("{", "}") AS ?b) WHERE { ?s ex:p ?v }')


def test_term_to_sparql_round_trips_through_queries_and_updates():
    store = EmbeddedStore()
    ran = []

    @settings(max_examples=LOCAL_EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.filter_too_much])
    @given(terms)
    def check(term):
        rows = list(store.query(f"SELECT ?x WHERE {{ BIND({term_to_sparql(term)} AS ?x) }}"))
        assert [r["x"] for r in rows] == [term]
        quad = Quad(NamedNode("https://example.org/s"), P, term, G)
        store.update(data_update(insert=[quad]))
        assert quad.triple in set(store.triples("px"))
        store.update(data_update(delete=[quad]))
        assert quad.triple not in set(store.triples("px"))
        # as a bound value, found by the query and only that one
        store.write("px", insert=[Triple(NamedNode("https://example.org/s"), P, term),
                                  Triple(NamedNode("https://example.org/other"), P,
                                         Literal("decoy"))])
        found = list(store.query(TRICKY_QUERY, bindings={"v": term}, paper_id="px"))
        assert [r["s"].value for r in found] == ["https://example.org/s"]
        assert found[0]["b"].value == "{}"
        store.update(f"CLEAR GRAPH {term_to_sparql(G)}")
        ran.append(term)

    check()
    assert len(ran) >= LOCAL_EXAMPLES // 2  # the property really ran on many terms


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    server = OxigraphServer(tmp_path_factory.mktemp("escaping"))
    yield RemoteStore.from_endpoint(server.url)
    server.stop()


def test_terms_round_trip_through_a_live_endpoint(remote):
    ran = []

    @settings(max_examples=REMOTE_EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.filter_too_much,
                                     HealthCheck.function_scoped_fixture])
    @given(literals())
    def check(term):
        remote.write("px", insert=[Triple(NamedNode("https://example.org/s"), P, term)])
        assert list(remote.triples("px")) == [Triple(NamedNode("https://example.org/s"), P,
                                                     term)]
        found = list(remote.query(TRICKY_QUERY, bindings={"v": term}, paper_id="px"))
        assert [r["s"].value for r in found] == ["https://example.org/s"]
        remote.write("px", delete=[Triple(NamedNode("https://example.org/s"), P, term)])
        assert list(remote.triples("px")) == []
        ran.append(term)

    check()
    assert len(ran) >= REMOTE_EXAMPLES // 2


@pytest.mark.parametrize("query", [
    "CONSTRUCT WHERE { ?s ?p ?v }",
    "INSERT DATA { <http://a> <http://b> ?v }",
])
def test_bindings_refused_where_values_cannot_go(query):
    with pytest.raises(InputError):
        EmbeddedStore().query(query, bindings={"v": Literal("x")})


def test_non_terms_and_bad_names_are_refused():
    with pytest.raises(InputError):
        term_to_sparql('"; DROP ALL; "')
    with pytest.raises(InputError, match="variable name"):
        EmbeddedStore().query("SELECT * { ?s ?p ?o }", bindings={"o } DROP": Literal("x")})
