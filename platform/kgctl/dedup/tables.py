"""Rows between DuckDB and Python in batches: what the out-of-core engine holds in Python is
one batch, never a table."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import duckdb
import numpy as np

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
    """A replay's (table, row) results, written to the database a batch at a time."""

    TABLES = {
        "decision": "a VARCHAR, b VARCHAR, score DOUBLE, method VARCHAR, evidence VARCHAR, "
                    "kind VARCHAR, phase INT, s1 VARCHAR, s2 VARCHAR, n1 BIGINT, n2 BIGINT, "
                    "n3 BIGINT",
        "root": "pid BIGINT, root BIGINT",
        "probe": "i BIGINT, j BIGINT, side INT, keys VARCHAR",
    }
    FIELDS = {table: " ".join(c.split()[0] for c in cols.split(","))
              for table, cols in TABLES.items()}

    def __init__(self, con: duckdb.DuckDBPyConnection, *, create: bool = False):
        """`create`: (re)create the tables, empty."""
        self.con = con
        self.rows: dict[str, list[tuple]] = {table: [] for table in self.TABLES}
        self.held = 0
        for table, cols in self.TABLES.items() if create else ():
            con.execute(f"CREATE OR REPLACE TABLE {table} ({cols})")

    def add(self, rows: Iterable[tuple[str, tuple]]) -> None:
        for table, row in rows:
            self.rows[table].append(row)
            self.held += 1
            if self.held >= BATCH:
                self.flush()

    def flush(self) -> None:
        for table, rows in self.rows.items():
            if rows:
                insert(self.con, table, columns(rows, self.FIELDS[table]))
                rows.clear()
        self.held = 0
