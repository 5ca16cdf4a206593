"""The paper text kept in a paper's provenance graph (what evidence quotes are placed in)."""

from __future__ import annotations

from pyoxigraph import Literal, NamedNode

from kgctl.store.base import GraphStore
from kgctl.store.iris import provenance_graph_iri
from kgctl.store.provenance import KG

PAPER_TEXT = NamedNode(KG + "paperText")
STORE_TEXT = "INSERT { GRAPH ?g { ?g ?p ?t } } WHERE { }"
DROP_TEXT = "DELETE { GRAPH ?g { ?g ?p ?t } } WHERE { GRAPH ?g { ?g ?p ?t } }"
TEXT_QUERY = "SELECT ?t WHERE { GRAPH ?g { ?g ?p ?t } }"


def store_paper_text(store: GraphStore, paper: str, text: str) -> None:
    """Keep the ingested text in the paper's provenance graph (replacing an older one)."""
    bindings = {"g": provenance_graph_iri(paper), "p": PAPER_TEXT}
    store.update(DROP_TEXT, bindings=bindings)
    store.update(STORE_TEXT, bindings=bindings | {"t": Literal(text)})


def paper_text(store: GraphStore, paper: str) -> str | None:
    rows = list(store.query(TEXT_QUERY, bindings={"g": provenance_graph_iri(paper),
                                                  "p": PAPER_TEXT}))
    return rows[0]["t"].value if rows else None
