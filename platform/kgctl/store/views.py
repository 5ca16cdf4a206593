"""Small pure helpers shared by the backends: paper ids from graph names, export prefixes.

>>> papers_of_graphs(["https://w3id.org/kgctl/paper/p2",
...                   "https://w3id.org/kgctl/paper/p1/provenance", "https://other.org/g"])
['p1', 'p2']
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import RdfFormat

from kgctl.store.iris import BASE, PAPER_BASE, paper_of_graph
from kgctl.store.provenance import KG

PROVENANCE_SUFFIX = "/provenance"
PREFIXES = {"kg": KG, "paper": PAPER_BASE, "kgctl": BASE}


def papers_of_graphs(graphs: Iterable[str]) -> list[str]:
    """Paper ids owning any of `graphs` (paper graphs or their provenance graphs), sorted."""
    found = set()
    for iri in graphs:
        if iri.endswith(PROVENANCE_SUFFIX):
            iri = iri[: -len(PROVENANCE_SUFFIX)]
        pid = paper_of_graph(iri)
        if pid is not None:
            found.add(pid)
    return sorted(found)


def triple_format(format: RdfFormat) -> bool:
    """True for formats that hold one graph (Turtle, N-Triples, RDF/XML)."""
    return not format.supports_datasets
