"""Exports that follow a view: one paper's merged graph as RDF, and tables as CSV.

A table is a SELECT query file a domain pack declares (its `tables` folder): one CSV column per
variable, one row per solution, run over the union of the view's graphs. CSV is written for
spreadsheets: UTF-8 with a byte-order mark (Excel then reads the encoding right), CRLF line ends,
plain values (an IRI as its text, a literal as its lexical form).

>>> from kgctl.store import open_store
>>> text = "SELECT ?a ?b WHERE { VALUES (?a ?b) { (1 'x, y') } }"
>>> table_csv(open_store(), text).decode("utf-8-sig").splitlines()
['a,b', '1,"x, y"']
"""

from __future__ import annotations

import csv
import io

from pyoxigraph import Quad, QuerySolutions, RdfFormat, serialize

from kgctl.errors import InputError
from kgctl.store.base import GraphStore
from kgctl.store.iris import graph_iri, provenance_graph_iri
from kgctl.store.views import PREFIXES, merged_graph_iri, merged_provenance_iri

GRAPH_QUADS = "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"


def has_merged(store: GraphStore, paper_id: str) -> bool:
    return bool(store.query("ASK { GRAPH ?g { ?s ?p ?o } }",
                            bindings={"g": merged_graph_iri(paper_id)}))


def merged_paper(store: GraphStore, paper_id: str, *, format: RdfFormat) -> bytes:
    """A paper's graph with its merged graph (the identities of its entities); in a dataset
    format with the identity links' provenance and the paper's own call provenance."""
    graphs = [graph_iri(paper_id), merged_graph_iri(paper_id)]
    if format.supports_datasets:
        graphs += [merged_provenance_iri(paper_id), provenance_graph_iri(paper_id)]
    quads = [Quad(r["s"], r["p"], r["o"], g) for g in graphs
             for r in store.query(GRAPH_QUADS, bindings={"g": g})]
    if not format.supports_datasets:
        return serialize((q.triple for q in quads), format=format, prefixes=PREFIXES)
    return serialize(quads, format=format, prefixes=PREFIXES)


def table_csv(store: GraphStore, sparql: str, *, view: str | None = None) -> bytes:
    """The rows of a SELECT query as CSV bytes (see the module doc)."""
    rows = store.query(sparql, union=True, view=view)
    if not isinstance(rows, QuerySolutions):
        raise InputError("a table is a SELECT query")
    columns = [v.value for v in rows.variables]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[c] is None else row[c].value for c in columns])
    return out.getvalue().encode("utf-8-sig")
