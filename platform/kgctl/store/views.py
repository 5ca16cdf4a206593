"""Small pure helpers shared by the backends: paper ids from graph names, export prefixes,
and the graphs each view of the store shows.

>>> papers_of_graphs(["https://w3id.org/kgctl/paper/p2",
...                   "https://w3id.org/kgctl/paper/p1/provenance", "https://other.org/g"])
['p1', 'p2']

Two views (docs/store.md): `merged` shows every graph, the paper graphs with each paper's
merged graph beside it (the identities of its entities, store.merged); `raw` shows every graph
but the merged ones. A merged graph repeats no fact of its paper graph, so the union of all
graphs counts nothing twice, and the default view needs no list of graphs (a long one makes
every pattern of a query look into each listed graph in turn).

>>> graphs = [PAPER_BASE + "p1", PAPER_BASE + "p2", MERGED_BASE + "p1", BASE + "dedup"]
>>> view_graphs(graphs, "merged") is None  # every graph
True
>>> [g.rsplit("kgctl/", 1)[1] for g in view_graphs(graphs, "raw")]
['dedup', 'paper/p1', 'paper/p2']
>>> view_graphs(graphs[:2], "raw") is None  # nothing merged yet: every graph
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyoxigraph import NamedNode, RdfFormat

from kgctl.errors import InputError
from kgctl.store.iris import BASE, PAPER_BASE, paper_of_graph
from kgctl.store.provenance import KG

PROVENANCE_SUFFIX = "/provenance"
PREFIXES = {"kg": KG, "paper": PAPER_BASE, "kgctl": BASE}
MERGED_BASE = BASE + "merged/"
DEDUP_GRAPH = NamedNode(BASE + "dedup")  # canonical nodes + owl:sameAs of `kgctl dedup`
DEDUP_PROVENANCE = NamedNode(BASE + "dedup/provenance")
VIEWS = ("merged", "raw")
DEFAULT_VIEW = "merged"


def merged_graph_iri(pid: str) -> NamedNode:
    """The merged graph of one paper: the identities of its entities (beside its graph)."""
    return NamedNode(MERGED_BASE + pid)


def merged_provenance_iri(pid: str) -> NamedNode:
    """Which method and score linked each entity of one paper to its identity."""
    return NamedNode(MERGED_BASE + pid + PROVENANCE_SUFFIX)


def merged_graphs(pid: str) -> list[NamedNode]:
    """The graphs of a paper's merged view: stale once its paper graph changes."""
    return [merged_graph_iri(pid), merged_provenance_iri(pid)]


def check_view(view: str) -> str:
    if view not in VIEWS:
        raise InputError(f"unknown view {view!r}: choose {' or '.join(VIEWS)}")
    return view


def view_graphs(graphs: Iterable[str], view: str) -> list[str] | None:
    """The named graphs `view` shows, sorted; None when it shows all of `graphs`."""
    if check_view(view) == "merged":
        return None
    graphs = sorted(set(graphs))
    shown = [g for g in graphs if not g.startswith(MERGED_BASE)]
    return None if len(shown) == len(graphs) else shown


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


class InView:
    """A store whose queries see one view unless they name another; everything else is the
    store's own (readers that take a GraphStore follow the view without knowing of it)."""

    def __init__(self, store: Any, view: str) -> None:
        self.store, self.view = store, check_view(view)

    def query(self, sparql: str, *, view: str | None = None, **options: Any) -> Any:
        return self.store.query(sparql, view=view or self.view, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def __repr__(self) -> str:
        return f"{self.store!r} ({self.view} view)"
