"""Read T-Box files (Turtle, RDF/XML, N-Triples, N3) with pyoxigraph into triples.

A syntax error becomes one OntologyError carrying file, line and column.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "bad.ttl"
>>> _ = path.write_text('@prefix ex: <http://e/> .\\nex:a ex:b "open .\\n')
>>> read_tbox(path)
Traceback (most recent call last):
...
kgctl.errors.OntologyError: bad.ttl:2:11: syntax error: ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from kgctl.errors import InputError, OntologyError

FORMATS: dict[str, ox.RdfFormat] = {
    ".ttl": ox.RdfFormat.TURTLE,
    ".turtle": ox.RdfFormat.TURTLE,
    ".owl": ox.RdfFormat.RDF_XML,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".xml": ox.RdfFormat.RDF_XML,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".n3": ox.RdfFormat.N3,
}


@dataclass(frozen=True)
class TBoxFile:
    """The triples of one T-Box file, in document order, and the prefixes it declares."""

    name: str  # file name only: what the IR records
    triples: tuple[ox.Triple, ...]
    prefixes: dict[str, str]


SUPPORTED = ("supported: Turtle (.ttl), RDF/XML (.owl, .rdf, .xml), N-Triples (.nt), N3 (.n3); "
             "convert other syntaxes first, e.g. robot convert -i in.owl -o out.ttl")
# syntaxes pyoxigraph does not read, recognised by how a file starts
_OTHER_SYNTAXES = (
    (re.compile(r"^\s*(Prefix|Ontology)\(", re.MULTILINE), "OWL functional syntax"),
    (re.compile(r"^\s*(Prefix|Ontology):", re.MULTILINE), "OWL Manchester syntax"),
    (re.compile(r"<Ontology\b[^>]*xmlns=\"http://www.w3.org/2002/07/owl#\""), "OWL/XML"),
    (re.compile(r"^format-version:", re.MULTILINE), "OBO flat file"),
)


def rdf_format(path: Path) -> ox.RdfFormat:
    """Serialisation of a T-Box file, from its extension."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown ontology format {path.suffix!r} ({SUPPORTED})")
    return fmt


def other_syntax(path: Path) -> str | None:
    """The name of an unsupported OWL syntax the file is written in, if it is one."""
    with path.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", errors="replace")
    return next((name for pattern, name in _OTHER_SYNTAXES if pattern.search(head)), None)


def read_tbox(path: Path) -> TBoxFile:
    """Parse one T-Box file; missing files and syntax errors are OntologyErrors."""
    if not path.is_file():
        raise InputError(f"no such ontology file: {path}")
    if path.suffix.lower() == ".obo":
        raise InputError(f"{path.name}: format not supported: OBO flat file; {SUPPORTED}")
    fmt = rdf_format(path)
    if (syntax := other_syntax(path)) is not None:
        raise OntologyError(f"{path.name}: format not supported: {syntax}; {SUPPORTED}")
    try:
        with path.open("rb") as handle:
            parser = ox.parse(handle, format=fmt)
            triples = tuple(quad.triple for quad in parser)
            prefixes = dict(parser.prefixes or {})
    except SyntaxError as exc:
        raise OntologyError(f"{path.name}:{_location(exc)}syntax error: {_reason(exc)}") from None
    except (OSError, ValueError) as exc:
        raise OntologyError(f"{path.name}: cannot read: {exc}") from None
    if not triples:
        raise OntologyError(f"{path.name}: no triples: an empty T-Box compiles to nothing")
    return TBoxFile(name=path.name, triples=triples, prefixes=prefixes)


def _location(exc: SyntaxError) -> str:
    return f"{exc.lineno}:{exc.offset}: " if exc.lineno else ""


def _reason(exc: SyntaxError) -> str:
    # pyoxigraph's message starts with "Parser error between line a column b and ...: reason"
    message = exc.msg or str(exc)
    return message.split(": ", 1)[1] if message.startswith("Parser error") else message
