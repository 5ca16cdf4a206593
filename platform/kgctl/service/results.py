r"""The byte-bounded sink pyoxigraph writes a result into, and the count of its rows.

The `Sink` refuses a chunk past the byte limit, so a huge result stops being produced instead
of being built in memory first; a result long enough to hold more rows than the limit has its
rows counted once written (one evaluation, in pyoxigraph's own writers).

>>> from pyoxigraph import Literal, NamedNode, Quad, QueryResultsFormat, Store
>>> store = Store()
>>> store.add(Quad(NamedNode("http://ex.org/a"), NamedNode("http://ex.org/p"), Literal("x\ny,")))
>>> result = lambda: store.query("SELECT ?s ?o ?none { ?s ?p ?o }")
>>> [count_rows(result().serialize(format=f), f) for f in (QueryResultsFormat.JSON,
...  QueryResultsFormat.XML, QueryResultsFormat.CSV, QueryResultsFormat.TSV)]
[1, 1, 1, 1]
>>> sink = Sink(10)
>>> sink.write(b"0123456789")
10
>>> sink.write(b"!")
Traceback (most recent call last):
...
kgctl.service.results.ResultTooLarge: result is over 10 bytes
"""

from __future__ import annotations

import csv
import io
import json

from pyoxigraph import QueryResultsFormat


class ResultTooLarge(Exception):
    """The serialised result passed the byte limit."""


class Sink:
    """A binary output that keeps at most `max_bytes` (pyoxigraph serialisers write to it too)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.size, self.overflowed = max_bytes, 0, False
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.max_bytes:
            self.overflowed = True
            raise ResultTooLarge(f"result is over {self.max_bytes} bytes")
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered (file-object protocol)."""

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def count_rows(body: bytes, fmt: QueryResultsFormat) -> int:
    """Rows of a result as pyoxigraph serialises it: literals escape what would end a row."""
    if fmt == QueryResultsFormat.JSON:
        return len(json.loads(body)["results"]["bindings"])
    if fmt == QueryResultsFormat.XML:
        return body.count(b"<result>")
    if fmt == QueryResultsFormat.TSV:
        return body.count(b"\n") - 1
    return sum(1 for _ in csv.reader(io.StringIO(body.decode("utf-8"), newline=""))) - 1
