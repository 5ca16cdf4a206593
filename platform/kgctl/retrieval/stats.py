"""Instance statistics of the store: class counts for list_classes / describe_class, and the
store's fingerprint (quads per graph) that tells when the data must be read again."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph as ox

from kgctl.retrieval.schema import Schema
from kgctl.store.base import GraphStore
from kgctl.store.provenance import KG

FINGERPRINT = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
CLASS_COUNTS = "SELECT ?t (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?t } GROUP BY ?t"


@dataclass
class StoreStats:
    class_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def collect(cls, store: GraphStore) -> StoreStats:
        return cls(class_counts={c: n for c, n in _counts(store, CLASS_COUNTS, "t").items()
                                 if not c.startswith(KG)})  # not the provenance records

    def instances(self, cls: str, schema: Schema) -> int:
        """Instances typed with `cls` or one of its sub-classes."""
        return sum(self.class_counts.get(c, 0) for c in schema.type_constraint(cls))


def fingerprint(store: GraphStore) -> dict[str, int]:
    """Quads per named graph: changes when the store's data does."""
    return _counts(store, FINGERPRINT, "g")


def _counts(store: GraphStore, sparql: str, key: str) -> dict[str, int]:
    return {s[key].value: int(s["n"].value) for s in store.query(sparql, union=True)
            if isinstance(s[key], ox.NamedNode)}
