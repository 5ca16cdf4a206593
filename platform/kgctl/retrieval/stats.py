"""Instance statistics of the store, read once per engine: they weight schema paths and are
shown by list_classes / describe_class."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph as ox

from kgctl.retrieval.schema import Schema
from kgctl.store.base import GraphStore
from kgctl.store.sparql import term_to_sparql

PROPERTY_COUNTS = "SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?p"
CLASS_COUNTS = "SELECT ?t (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?t } GROUP BY ?t"


@dataclass
class StoreStats:
    property_counts: dict[str, int] = field(default_factory=dict)
    class_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def collect(cls, store: GraphStore) -> StoreStats:
        return cls(property_counts=_counts(store, PROPERTY_COUNTS, "p"),
                   class_counts=_counts(store, CLASS_COUNTS, "t"))

    def instances(self, cls: str, schema: Schema) -> int:
        """Instances typed with `cls` or one of its sub-classes."""
        return sum(self.class_counts.get(c, 0) for c in schema.type_constraint(cls))

    def class_property_counts(self, store: GraphStore, schema: Schema,
                              cls: str) -> tuple[dict[str, int], dict[str, int]]:
        """(outgoing, incoming) triple counts per property for instances of `cls`."""
        types = " ".join(term_to_sparql(ox.NamedNode(c)) for c in schema.type_constraint(cls))
        out = f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ VALUES ?t {{ {types} }} ?s a ?t . " \
              "?s ?p ?o } GROUP BY ?p"
        inc = f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ VALUES ?t {{ {types} }} ?s a ?t . " \
              "?x ?p ?s } GROUP BY ?p"
        return _counts(store, out, "p"), _counts(store, inc, "p")


def _counts(store: GraphStore, sparql: str, key: str) -> dict[str, int]:
    return {s[key].value: int(s["n"].value) for s in store.query(sparql, union=True)
            if isinstance(s[key], ox.NamedNode)}
