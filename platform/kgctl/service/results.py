r"""SPARQL 1.1 result serialisers for SELECT rows already read under the service's limits.

pyoxigraph serialises only a live result iterator; the service reads rows itself (to enforce
the timeout and the row limit) and writes them with these pure functions.

>>> from pyoxigraph import Literal, NamedNode
>>> rows = [(NamedNode("http://ex.org/a"), Literal("x, y", language="en")), (None, Literal(3))]
>>> to_csv(("s", "label"), rows)
b's,label\r\nhttp://ex.org/a,"x, y"\r\n,3\r\n'
>>> print(to_tsv(("s", "label"), rows).decode().replace("\t", " | "), end="")
?s | ?label
<http://ex.org/a> | "x, y"@en
 | "3"^^<http://www.w3.org/2001/XMLSchema#integer>
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence

from pyoxigraph import BlankNode, Literal, NamedNode, QueryResultsFormat, Triple

Cell = NamedNode | BlankNode | Literal | Triple | None
Row = Sequence[Cell]

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
RESULTS_NS = "http://www.w3.org/2005/sparql-results#"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
ET.register_namespace("", RESULTS_NS)


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


def to_json(variables: Sequence[str], rows: Sequence[Row]) -> bytes:
    bindings = [{name: term_json(cell)
                 for name, cell in zip(variables, row, strict=True) if cell is not None}
                for row in rows]
    document = {"head": {"vars": list(variables)}, "results": {"bindings": bindings}}
    return json.dumps(document, ensure_ascii=False).encode()


def _xml_term(parent: ET.Element, term: NamedNode | BlankNode | Literal | Triple) -> None:
    if isinstance(term, NamedNode):
        ET.SubElement(parent, f"{{{RESULTS_NS}}}uri").text = term.value
    elif isinstance(term, BlankNode):
        ET.SubElement(parent, f"{{{RESULTS_NS}}}bnode").text = term.value
    elif isinstance(term, Triple):
        triple = ET.SubElement(parent, f"{{{RESULTS_NS}}}triple")
        for part in ("subject", "predicate", "object"):
            _xml_term(ET.SubElement(triple, f"{{{RESULTS_NS}}}{part}"), getattr(term, part))
    else:
        literal = ET.SubElement(parent, f"{{{RESULTS_NS}}}literal")
        literal.text = term.value
        if term.language:
            literal.set(XML_LANG, term.language)
        elif term.datatype.value != XSD_STRING:
            literal.set("datatype", term.datatype.value)


def to_xml(variables: Sequence[str], rows: Sequence[Row]) -> bytes:
    root = ET.Element(f"{{{RESULTS_NS}}}sparql")
    head = ET.SubElement(root, f"{{{RESULTS_NS}}}head")
    for name in variables:
        ET.SubElement(head, f"{{{RESULTS_NS}}}variable", name=name)
    results = ET.SubElement(root, f"{{{RESULTS_NS}}}results")
    for row in rows:
        result = ET.SubElement(results, f"{{{RESULTS_NS}}}result")
        for name, cell in zip(variables, row, strict=True):
            if cell is not None:
                _xml_term(ET.SubElement(result, f"{{{RESULTS_NS}}}binding", name=name), cell)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _csv_cell(term: Cell) -> str:
    if term is None:
        return ""
    if isinstance(term, BlankNode):
        return f"_:{term.value}"
    if isinstance(term, NamedNode | Literal):
        return term.value
    return str(term)


def to_csv(variables: Sequence[str], rows: Sequence[Row]) -> bytes:
    """SPARQL 1.1 CSV: plain values, CRLF line ends, RFC 4180 quoting."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(variables)
    writer.writerows([_csv_cell(cell) for cell in row] for row in rows)
    return buffer.getvalue().encode()


def to_tsv(variables: Sequence[str], rows: Sequence[Row]) -> bytes:
    """SPARQL 1.1 TSV: terms in their SPARQL/N-Triples syntax (tabs and newlines escaped)."""
    lines = ["\t".join(f"?{name}" for name in variables)]
    lines.extend("\t".join("" if cell is None else str(cell) for cell in row) for row in rows)
    return ("\n".join(lines) + "\n").encode()


SERIALISERS: dict[QueryResultsFormat, Callable[[Sequence[str], Sequence[Row]], bytes]] = {
    QueryResultsFormat.JSON: to_json,
    QueryResultsFormat.XML: to_xml,
    QueryResultsFormat.CSV: to_csv,
    QueryResultsFormat.TSV: to_tsv,
}
