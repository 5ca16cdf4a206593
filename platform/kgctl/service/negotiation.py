"""Content negotiation: pick a serialisation from the Accept header or a ``format`` parameter.

>>> negotiate("text/csv;q=0.5, application/sparql-results+json", SOLUTION_TYPES).name
'SPARQL Results in JSON'
>>> negotiate("text/*", SOLUTION_TYPES).name
'SPARQL Results in CSV'
>>> negotiate(None, GRAPH_TYPES).name
'Turtle'
>>> negotiate("image/png", GRAPH_TYPES) is None
True
>>> by_name("nt", GRAPH_TYPES).name
'N-Triples'
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TypeVar

from pyoxigraph import QueryResultsFormat, RdfFormat

F = TypeVar("F", QueryResultsFormat, RdfFormat)

# media type -> format; the first entry is the default when the client accepts anything
SOLUTION_TYPES: dict[str, QueryResultsFormat] = {
    "application/sparql-results+json": QueryResultsFormat.JSON,
    "application/json": QueryResultsFormat.JSON, "application/xml": QueryResultsFormat.XML,
    "application/sparql-results+xml": QueryResultsFormat.XML, "text/csv": QueryResultsFormat.CSV,
    "text/tab-separated-values": QueryResultsFormat.TSV, "text/xml": QueryResultsFormat.XML}
GRAPH_TYPES: dict[str, RdfFormat] = {
    "text/turtle": RdfFormat.TURTLE, "application/x-turtle": RdfFormat.TURTLE,
    "application/n-triples": RdfFormat.N_TRIPLES, "text/plain": RdfFormat.N_TRIPLES,
    "application/ld+json": RdfFormat.JSON_LD, "application/json": RdfFormat.JSON_LD,
    "application/rdf+xml": RdfFormat.RDF_XML}
# short names for the ``format`` parameter (download links cannot set an Accept header)
FORMAT_NAMES: dict[str, str] = {
    "json": "application/json", "xml": "application/xml", "csv": "text/csv",
    "tsv": "text/tab-separated-values", "turtle": "text/turtle", "ttl": "text/turtle",
    "nt": "application/n-triples", "ntriples": "application/n-triples",
    "jsonld": "application/ld+json", "rdfxml": "application/rdf+xml"}
_DEFAULT_Q = 1.0


@lru_cache(maxsize=256)  # clients send a few Accept headers, over and over
def parse_accept(header: str) -> tuple[tuple[str, float], ...]:
    """Media ranges of an Accept header, best first (stable for equal q).

    >>> parse_accept("text/csv;q=0.2, application/json , */*;q=0.1")
    (('application/json', 1.0), ('text/csv', 0.2), ('*/*', 0.1))
    """
    ranges: list[tuple[str, float]] = []
    for part in header.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        quality = _DEFAULT_Q
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            ranges.append((media.lower(), quality))
    return tuple(sorted(ranges, key=lambda item: -item[1]))


def negotiate(accept: str | None, offers: Mapping[str, F]) -> F | None:
    """The best offered format for an Accept header; None when nothing offered is acceptable."""
    if not accept or not accept.strip():
        return next(iter(offers.values()))
    for media, _ in parse_accept(accept):
        if media == "*/*":
            return next(iter(offers.values()))
        if media.endswith("/*"):
            family = media[:-1]
            match = next((f for m, f in offers.items() if m.startswith(family)), None)
        else:
            match = offers.get(media)
        if match is not None:
            return match
    return None


def by_name(name: str, offers: Mapping[str, F]) -> F | None:
    """Format for a ``format`` parameter: a short name or a media type."""
    key = name.strip().lower()
    return offers.get(FORMAT_NAMES.get(key, key))
