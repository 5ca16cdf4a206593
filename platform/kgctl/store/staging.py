"""Writes larger than one request, kept all-or-nothing: stage, journal, swap.

1. stage: each target graph's new content is built in its own staging graph, in requests of at
   most `max_quads` quads / `max_bytes` bytes (a copy of the target first when the write only
   changes part of it);
2. journal: one small INSERT DATA records ``<staging> kg:replaces|kg:addsTo <target>`` for
   every target: the commit point;
3. swap: one request copies every staging graph into its target (after clearing it, for
   ``replaces``), each copy guarded by its journal entry, then removes the journal entries and
   the staging graphs.

Every request is idempotent (a lost answer is simply sent again); a swap cut short by a server
crash on a server that commits operation by operation is finished by the journal: the next
write to those targets runs the swap again. A write that dies before its journal entry leaves
only staging graphs, which readers never see. The target is old before the swap, new after.

>>> plan = [Staged(NamedNode("https://w3id.org/kgctl/paper/p1"), replace=True)]
>>> text = swap_update(plan).replace(plan[0].staging.value, "S")
>>> print(text.replace("https://w3id.org/kgctl/", ""))
DELETE { GRAPH <paper/p1> { ?s ?p ?o } }
  WHERE { GRAPH <journal> { <S> <ns#replaces> <paper/p1> } GRAPH <paper/p1> { ?s ?p ?o } } ;
INSERT { GRAPH <paper/p1> { ?s ?p ?o } }
  WHERE { GRAPH <journal> { <S> <ns#replaces> <paper/p1> } GRAPH <S> { ?s ?p ?o } } ;
DELETE DATA { GRAPH <journal> { <S> <ns#replaces> <paper/p1> } } ;
DROP SILENT GRAPH <S>
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from pyoxigraph import NamedNode, Quad

from kgctl.store.iris import BASE
from kgctl.store.provenance import KG
from kgctl.store.sparql import data_update, term_to_sparql

JOURNAL = NamedNode(BASE + "journal")
STAGING_BASE = BASE + "staging/"
REPLACES = NamedNode(KG + "replaces")
ADDS_TO = NamedNode(KG + "addsTo")
JOURNAL_QUERY = (f"SELECT ?staging ?mode ?target WHERE {{ GRAPH {term_to_sparql(JOURNAL)} "
                 "{ ?staging ?mode ?target } }")
Update = Callable[[str], None]


def hidden_graph(iri: str) -> bool:
    """Graphs of the write machinery, never shown to readers."""
    return iri.startswith(STAGING_BASE) or iri == JOURNAL.value


def staging_graph(target: NamedNode) -> NamedNode:
    return NamedNode(STAGING_BASE + hashlib.sha256(target.value.encode()).hexdigest()[:20])


@dataclass
class Staged:
    """New content of one target graph: optionally a copy of it, minus `delete`, plus `insert`."""

    target: NamedNode
    replace: bool
    copy: bool = False
    delete: list[Quad] = field(default_factory=list)
    insert: list[Quad] = field(default_factory=list)

    @property
    def staging(self) -> NamedNode:
        return staging_graph(self.target)

    def journal_quad(self) -> Quad:
        return Quad(self.staging, REPLACES if self.replace else ADDS_TO, self.target, JOURNAL)


def batches(quads: list[Quad], *, max_quads: int, max_bytes: int) -> Iterator[list[Quad]]:
    """Consecutive slices of `quads` under both limits (a single oversized quad goes alone)."""
    batch: list[Quad] = []
    size = 0
    for quad in quads:
        length = len(str(quad)) + 8
        if batch and (len(batch) >= max_quads or size + length > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(quad)
        size += length
    if batch:
        yield batch


def _on(graph: NamedNode, quads: Iterable[Quad]) -> list[Quad]:
    return [Quad(q.subject, q.predicate, q.object, graph) for q in quads]


def stage(update: Update, plan: list[Staged], *, max_quads: int, max_bytes: int) -> None:
    """Steps 1 and 2: fill the staging graphs, then write the journal entries (commit point)."""
    for item in plan:
        g = term_to_sparql(item.staging)
        start = f"DROP SILENT GRAPH {g}"
        if item.copy:
            start += f" ;\nADD SILENT GRAPH {term_to_sparql(item.target)} TO GRAPH {g}"
        update(start)
        for part in batches(_on(item.staging, item.delete), max_quads=max_quads,
                            max_bytes=max_bytes):
            update(data_update(delete=part))
        for part in batches(_on(item.staging, item.insert), max_quads=max_quads,
                            max_bytes=max_bytes):
            update(data_update(insert=part))
    update(data_update(insert=[item.journal_quad() for item in plan]))


def swap_update(plan: list[Staged]) -> str:
    """Step 3 as one request. Each copy is guarded by its journal entry, so the request can
    run again after it took effect (a retried lost answer, a recovery) and change nothing."""
    journal = term_to_sparql(JOURNAL)
    operations = []
    for item in plan:
        target, staging = term_to_sparql(item.target), term_to_sparql(item.staging)
        entry = f"GRAPH {journal} {{ {staging} {term_to_sparql(item.journal_quad().predicate)} " \
                f"{target} }}"
        if item.replace:
            operations.append(f"DELETE {{ GRAPH {target} {{ ?s ?p ?o }} }}\n"
                              f"  WHERE {{ {entry} GRAPH {target} {{ ?s ?p ?o }} }}")
        operations.append(f"INSERT {{ GRAPH {target} {{ ?s ?p ?o }} }}\n"
                          f"  WHERE {{ {entry} GRAPH {staging} {{ ?s ?p ?o }} }}")
    operations.append(data_update(delete=[item.journal_quad() for item in plan]))
    operations += [f"DROP SILENT GRAPH {term_to_sparql(item.staging)}" for item in plan]
    return " ;\n".join(operations)


def pending(rows: Iterable[dict], targets: set[str] | None = None) -> list[Staged]:
    """Journal entries (rows of JOURNAL_QUERY) whose swap did not finish, for `targets`."""
    plan = []
    for row in rows:
        target, mode = row["target"], row["mode"]
        if not isinstance(target, NamedNode) or (targets is not None
                                                 and target.value not in targets):
            continue
        item = Staged(target, replace=mode == REPLACES)
        if item.staging == row["staging"]:
            plan.append(item)
    return plan
