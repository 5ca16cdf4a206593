"""The SPARQL 1.1 Service Description of the endpoint (answered to a bare GET of it).

>>> doc = describe("http://127.0.0.1:7878/query", RdfFormat.TURTLE, updates=False,
...                union_default=True)
>>> b"sd:feature sd:UnionDefaultGraph" in doc
True
"""

from __future__ import annotations

from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat, Triple, serialize

SD = "http://www.w3.org/ns/sparql-service-description#"
FORMATS = "http://www.w3.org/ns/formats/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_COMMENT = NamedNode("http://www.w3.org/2000/01/rdf-schema#comment")
RESULT_FORMATS = ("SPARQL_Results_JSON", "SPARQL_Results_XML", "SPARQL_Results_CSV",
                  "SPARQL_Results_TSV", "Turtle", "N-Triples", "JSON-LD", "RDF_XML")
DEFAULT_GRAPH_NOTE = ("The default graph of a query is the store's default graph (empty: every "
                      "paper is a named graph) unless the request names graphs with "
                      "default-graph-uri, or asks for union-default-graph=true{}.")


def describe(endpoint: str, fmt: RdfFormat, *, updates: bool, union_default: bool) -> bytes:
    """The description of the service at `endpoint`, serialised in `fmt`."""
    service, dataset = BlankNode(), BlankNode()
    languages = ["SPARQL11Query"] + (["SPARQL11Update"] if updates else [])
    note = DEFAULT_GRAPH_NOTE.format(" (this server makes the union the default graph)"
                                     if union_default else "")
    triples = [Triple(service, RDF_TYPE, NamedNode(SD + "Service")),
               Triple(service, NamedNode(SD + "endpoint"), NamedNode(endpoint)),
               Triple(service, NamedNode(SD + "defaultDataset"), dataset),
               Triple(dataset, RDF_TYPE, NamedNode(SD + "Dataset")),
               Triple(dataset, RDFS_COMMENT, Literal(note))]
    facts = [("supportedLanguage", lang) for lang in languages] + [
        ("feature", "UnionDefaultGraph")] * union_default
    triples += [Triple(service, NamedNode(SD + p), NamedNode(SD + o)) for p, o in facts]
    triples += [Triple(service, NamedNode(SD + "resultFormat"), NamedNode(FORMATS + name))
                for name in RESULT_FORMATS]
    return serialize(triples, format=fmt, prefixes={"sd": SD, "formats": FORMATS})
