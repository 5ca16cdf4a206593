r"""Streaming SPARQL 1.1 result writers and the byte-bounded sink they write into.

The worker reads rows one at a time (to count them against the row limit) and each writer
turns them into chunks as they come; the `Sink` refuses a chunk past the byte limit, so a
huge result stops being produced instead of being built in memory first.

>>> from pyoxigraph import Literal, NamedNode
>>> rows = [(NamedNode("http://ex.org/a"), Literal("x, y", language="en")), (None, Literal(3))]
>>> b"".join(csv_chunks(("s", "label"), rows))
b's,label\r\nhttp://ex.org/a,"x, y"\r\n,3\r\n'
>>> print(b"".join(tsv_chunks(("s", "label"), rows)).decode().replace("\t", " | "), end="")
?s | ?label
<http://ex.org/a> | "x, y"@en
 | "3"^^<http://www.w3.org/2001/XMLSchema#integer>
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from xml.sax.saxutils import escape, quoteattr

from pyoxigraph import BlankNode, Literal, NamedNode, QueryResultsFormat, Triple

Cell = NamedNode | BlankNode | Literal | Triple | None
Row = Sequence[Cell]
Writer = Callable[[Sequence[str], Iterable[Row]], Iterator[bytes]]

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RESULTS_NS = "http://www.w3.org/2005/sparql-results#"


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


def term_json(term: NamedNode | BlankNode | Literal | Triple) -> dict:
    """One RDF term in the SPARQL 1.1 JSON results form (RDF 1.2 triple terms included)."""
    if isinstance(term, NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, Triple):
        return {"type": "triple", "value": {
            "subject": term_json(term.subject),
            "predicate": term_json(term.predicate),
            "object": term_json(term.object),
        }}
    out: dict = {"type": "literal", "value": term.value}
    if term.language:
        out["xml:lang"] = term.language
    elif term.datatype.value != XSD_STRING:
        out["datatype"] = term.datatype.value
    return out


def json_chunks(variables: Sequence[str], rows: Iterable[Row]) -> Iterator[bytes]:
    yield b'{"head":{"vars":' + json.dumps(list(variables)).encode() + b'},"results":{"bindings":['
    keys = [json.dumps(name) + ":" for name in variables]
    written: dict[NamedNode | BlankNode | Literal | Triple, str] = {}  # terms repeat: encode once
    separator = ""
    for row in rows:
        parts = []
        for key, cell in zip(keys, row, strict=True):
            if cell is not None:
                text = written.get(cell)
                if text is None:
                    text = written[cell] = json.dumps(term_json(cell), ensure_ascii=False)
                parts.append(key + text)
        yield f"{separator}{{{','.join(parts)}}}".encode()
        separator = ","
    yield b"]}}"


def _xml_term(term: NamedNode | BlankNode | Literal | Triple) -> str:
    if isinstance(term, NamedNode):
        return f"<uri>{escape(term.value)}</uri>"
    if isinstance(term, BlankNode):
        return f"<bnode>{escape(term.value)}</bnode>"
    if isinstance(term, Triple):
        return (f"<triple><subject>{_xml_term(term.subject)}</subject><predicate>"
                f"{_xml_term(term.predicate)}</predicate><object>{_xml_term(term.object)}"
                "</object></triple>")
    if term.language:
        attribute = f" xml:lang={quoteattr(term.language)}"
    elif term.datatype.value != XSD_STRING:
        attribute = f" datatype={quoteattr(term.datatype.value)}"
    else:
        attribute = ""
    return f"<literal{attribute}>{escape(term.value)}</literal>"


def xml_chunks(variables: Sequence[str], rows: Iterable[Row]) -> Iterator[bytes]:
    head = "".join(f"<variable name={quoteattr(name)}/>" for name in variables)
    yield (f'<?xml version="1.0" encoding="utf-8"?>\n<sparql xmlns="{RESULTS_NS}"><head>{head}'
           "</head><results>").encode()
    for row in rows:
        cells = "".join(f"<binding name={quoteattr(name)}>{_xml_term(cell)}</binding>"
                        for name, cell in zip(variables, row, strict=True) if cell is not None)
        yield f"<result>{cells}</result>".encode()
    yield b"</results></sparql>"


def _csv_cell(term: Cell) -> str:
    if term is None:
        return ""
    if isinstance(term, BlankNode):
        return f"_:{term.value}"
    if isinstance(term, NamedNode | Literal):
        return term.value
    return str(term)


def csv_chunks(variables: Sequence[str], rows: Iterable[Row]) -> Iterator[bytes]:
    """SPARQL 1.1 CSV: plain values, CRLF line ends, RFC 4180 quoting."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(variables)
    for row in rows:
        writer.writerow([_csv_cell(cell) for cell in row])
        yield buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue().encode()


def tsv_chunks(variables: Sequence[str], rows: Iterable[Row]) -> Iterator[bytes]:
    """SPARQL 1.1 TSV: terms in their SPARQL/N-Triples syntax (tabs and newlines escaped)."""
    yield ("\t".join(f"?{name}" for name in variables) + "\n").encode()
    for row in rows:
        yield ("\t".join("" if cell is None else str(cell) for cell in row) + "\n").encode()


WRITERS: dict[QueryResultsFormat, Writer] = {
    QueryResultsFormat.JSON: json_chunks,
    QueryResultsFormat.XML: xml_chunks,
    QueryResultsFormat.CSV: csv_chunks,
    QueryResultsFormat.TSV: tsv_chunks,
}
