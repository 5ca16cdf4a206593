"""The graph a query command reads: a store, an endpoint, or data files loaded for querying.

Data files (TriG, N-Quads, Turtle, N-Triples, N3, RDF/XML) are read into an in-memory store; a
triple file becomes one named graph ``urn:kgctl:data:<file name>``. Their blank nodes are
skolemised: each becomes ``urn:kgctl:bnode:<file digest>:<n>`` (n in order of appearance), so a
file's blank nodes stay distinct from another file's and the same file gives the same IRIs.
With ``--store`` and ``--data`` together the store's graphs are copied into memory first: the
on-disk store is only read, never written. When no T-Box is given, one stored with the data
(``owl:Class``, ``rdf:Property``, ... declarations) is read back from the graph.

>>> quads = skolemised(b'@prefix ex: <http://e/> . ex:a ex:p [ ex:q 1 ] .', "a.ttl")
>>> [q.object.value.startswith("urn:kgctl:bnode:") for q in quads if q.predicate.value == "http://e/p"]
[True]
>>> quads[0].graph_name.value
'urn:kgctl:data:a.ttl'
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path
from urllib.parse import quote

import pyoxigraph as ox

from kgctl.errors import InputError, OntologyError
from kgctl.ontology.ir import OntologyIR
from kgctl.store import open_store as open_any
from kgctl.store.base import GraphStore
from kgctl.store.embedded import EmbeddedStore

FORMATS = {".trig": ox.RdfFormat.TRIG, ".nq": ox.RdfFormat.N_QUADS,
           ".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES, ".n3": ox.RdfFormat.N3,
           ".rdf": ox.RdfFormat.RDF_XML, ".owl": ox.RdfFormat.RDF_XML,
           ".xml": ox.RdfFormat.RDF_XML}
SKOLEM = "urn:kgctl:bnode:"
DATA_GRAPH = "urn:kgctl:data:"
OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
# the T-Box statements a graph may carry: declarations of classes and properties with all
# their statements, and the blank structures (restrictions, unionOf lists) they point to
TBOX = f"""CONSTRUCT {{ ?s ?p ?o }} WHERE {{
  {{ VALUES ?k {{ <{OWL}Class> <{RDFS}Class> <{OWL}ObjectProperty> <{OWL}DatatypeProperty>
                <{RDF}Property> <{OWL}Ontology> <{OWL}AnnotationProperty> }}
    ?s a ?k . ?s ?p ?o }}
  UNION
  {{ ?s ?p ?o . FILTER(STRSTARTS(STR(?s), "{SKOLEM}") && (STRSTARTS(STR(?p), "{OWL}")
       || ?p IN (<{RDF}first>, <{RDF}rest>)
       || (?p = <{RDF}type> && STRSTARTS(STR(?o), "{OWL}")))) }}
}}"""


def open_graph(store: Path | None, data: tuple[Path, ...], endpoint: str | None = None
               ) -> GraphStore:
    """The store, endpoint or data files to query (see the module docstring)."""
    if endpoint is not None:
        if store is not None or data:
            raise InputError("give --endpoint or --store/--data, not both")
        return open_any(endpoint=endpoint)
    if store is None and not data:
        raise InputError("give --store DIR, --data FILE or --endpoint URL")
    if store is not None and not data:
        return EmbeddedStore(store)
    quads = [q for path in data for q in read_data(path)]  # all files read before any load
    memory = EmbeddedStore()
    if store is not None:
        disk = EmbeddedStore(store)
        try:
            memory.import_data(disk.export())
        finally:
            disk.close()
    memory.import_quads(quads)
    return memory


def read_data(path: Path) -> list[ox.Quad]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    return skolemised(raw, path.name)


def skolemised(raw: bytes, name: str) -> list[ox.Quad]:
    """The quads of one data file, blank nodes replaced by IRIs, triples in the file's graph."""
    suffix = Path(name).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        raise InputError(f"{name}: unknown data format {suffix!r} (one of "
                         f"{', '.join(sorted(FORMATS))})")
    try:
        quads = list(ox.parse(raw, format=fmt))
    except SyntaxError as exc:
        raise InputError(f"{name}: not valid {fmt.name}: {exc}") from None
    stem = f"{SKOLEM}{hashlib.sha256(raw).hexdigest()[:12]}:"
    names: dict[str, ox.NamedNode] = {}

    def iri(term):
        if isinstance(term, ox.BlankNode):
            return names.setdefault(term.value, ox.NamedNode(f"{stem}{len(names)}"))
        return term

    graph = ox.NamedNode(DATA_GRAPH + quote(name))
    return [ox.Quad(iri(q.subject), q.predicate, iri(q.object),
                    graph if isinstance(q.graph_name, ox.DefaultGraph) else iri(q.graph_name))
            for q in quads]


_DECLARED = re.compile(rb"@?prefix\s+([A-Za-z][\w.-]*)\s*:\s*<([^>\s]+)>"
                       rb"|xmlns:([A-Za-z][\w.-]*)=[\"']([^\"']+)[\"']", re.IGNORECASE)


def declared_prefixes(paths: tuple[Path, ...]) -> dict[str, str]:
    """Prefixes the data files declare (Turtle/TriG/N3 ``@prefix``/``PREFIX``, RDF/XML
    ``xmlns:``), first declaration of a name wins: names for the namespaces the data uses.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "d.ttl"
    >>> _ = f.write_text("@prefix ecrm: <http://erlangen-crm.org/current/> .")
    >>> declared_prefixes((f,))
    {'ecrm': 'http://erlangen-crm.org/current/'}
    """
    found: dict[str, str] = {}
    for path in paths:
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        for m in _DECLARED.finditer(raw):
            name, namespace = (m[1], m[2]) if m[1] else (m[3], m[4])
            found.setdefault(name.decode(), namespace.decode())
    return found


def stored_tbox(store: GraphStore, *, prefixes: dict[str, str] | None = None
                ) -> OntologyIR | None:
    """The IR of the T-Box statements held in the graph itself (its namespaces named by
    `prefixes`), or None when it holds none."""
    from kgctl.ontology.loader import load_ir

    triples = list(store.query(TBOX, union=True))
    if not any(t.predicate.value == RDF + "type" for t in triples):
        return None
    blanks: dict[str, ox.BlankNode] = {}

    def blank(term):
        if isinstance(term, ox.NamedNode) and term.value.startswith(SKOLEM):
            return blanks.setdefault(term.value, ox.BlankNode())
        return term

    text = ox.serialize([ox.Triple(blank(t.subject), t.predicate, blank(t.object))
                         for t in triples], format=ox.RdfFormat.TURTLE, prefixes=prefixes or {})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stored-tbox.ttl"
        path.write_bytes(text)
        try:
            return load_ir([path], profile_paths=[])
        except OntologyError as exc:
            raise InputError(f"the T-Box stored in the graph cannot be read: {exc}") from None
