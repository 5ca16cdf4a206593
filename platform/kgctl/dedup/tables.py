"""Rows between DuckDB and Python in batches: what the out-of-core engine holds in Python is
one batch, never a table."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import duckdb
import numpy as np

from kgctl.dedup.cluster import Resolver

BATCH = 100_000  # rows written to the database at once
FETCH = 10_000  # rows read back at once


def stream(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None, *,
         size: int = FETCH) -> Iterator:
    """The rows of a query, fetched `size` at a time."""
    cursor = con.cursor()
    cursor.execute(query, params)
    while batch := cursor.fetchmany(size):
        yield from batch
    cursor.close()


def insert(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, np.ndarray]) -> None:
    con.register("rows_in", columns)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM rows_in")
    finally:
        con.unregister("rows_in")


def objects(values: Iterable) -> np.ndarray:
    items = list(values)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def columns(rows: list[tuple], names: str) -> dict[str, np.ndarray]:
    """Rows as named columns (no rows: empty columns)."""
    fields = names.split()
    cols = list(zip(*rows, strict=True)) or [()] * len(fields)
    return {name: objects(col) for name, col in zip(fields, cols, strict=True)}


class Outputs:
    """Batches of a replay's results written to the database as they come."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.rows: list[tuple] = []
        self.roots: list[tuple[int, int]] = []
        self.probes: list[tuple] = []

    def step(self, resolver: Resolver, order: list) -> None:
        """Move the step's decisions out of the resolver (a part can be most of the corpus)."""
        for kind, items in (("decision", resolver.decisions), ("grey", resolver.grey),
                            ("refused", resolver.refused)):
            self.rows.extend((p.a, p.b, p.score, p.method, p.evidence, kind, *order)
                             for p in items)
            items.clear()
        if len(self.rows) >= BATCH:
            self.flush()

    def part(self, resolver: Resolver | None) -> None:
        if resolver is not None:
            self.roots.extend((node, resolver.find(node)) for node in resolver.parent)
        if len(self.rows) + len(self.roots) + len(self.probes) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            insert(self.con, "decision", columns(
                self.rows, "a b score method evidence kind phase s1 s2 n1 n2 n3"))
        if self.roots:
            insert(self.con, "root", columns(self.roots, "pid root"))
        if self.probes:
            insert(self.con, "probe", columns(self.probes, "i j side keys"))
        self.rows, self.roots, self.probes = [], [], []

