"""The class-level schema graph mined from the instance data, and its merge with the T-Box.

One aggregate query over the union of the store's graphs reads, for every class of subject, which
property links it to which class of object (or which datatype of literal), with a count; a
second reads each property's use by any subject (typed or not), so a property whose subjects or
objects carry no type is still known, with its kind (node or literal) and datatypes. Classes and
properties the data uses but the T-Box does not declare join the IR as ``external`` terms, with
the classes the data links them to as domain and range: every tool then works on a graph whose
T-Box is partial or missing. The platform's own bookkeeping (the ``kg:Call`` records of the
provenance graphs) is not part of the schema.

>>> ir = merge(OntologyIR(), Mined(edges=(Edge(subject="http://e/A", property="http://e/p",
...     object="http://e/B", literal=False, count=3),), uses={"http://e/p": (3, 0, ())}))
>>> sorted(ir.classes), ir.properties["http://e/p"].range, ir.prefixes["e"]
(['http://e/A', 'http://e/B'], ('http://e/B',), 'http://e/')
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pyoxigraph as ox

from kgctl.ontology.ir import ClassInfo, OntologyIR, PropertyInfo
from kgctl.store.base import GraphStore
from kgctl.store.provenance import KG

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
DATA_SOURCE = "instance data"  # the `ontology` of a term only the data declares
# well-known vocabularies get their usual prefix; other namespaces a derived one
KNOWN_PREFIXES = {
    "http://www.w3.org/2004/02/skos/core#": "skos", "http://xmlns.com/foaf/0.1/": "foaf",
    "http://schema.org/": "schema", "https://schema.org/": "schema",
    "http://purl.org/dc/terms/": "dcterms", "http://purl.org/dc/elements/1.1/": "dc",
    "http://www.w3.org/ns/prov#": "prov", "http://www.w3.org/2006/time#": "time",
    "http://www.w3.org/ns/sosa/": "sosa", "http://www.w3.org/ns/ssn/": "ssn",
    "http://www.w3.org/2003/01/geo/wgs84_pos#": "geo", "http://www.opengis.net/ont/geosparql#":
    "geosparql", "http://www.w3.org/2002/07/owl#": "owl",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#": "rdf",
    "http://www.w3.org/2000/01/rdf-schema#": "rdfs", "http://www.w3.org/2001/XMLSchema#": "xsd",
}

EDGES = f"""SELECT ?c ?p ?oc ?dt (COUNT(*) AS ?n) WHERE {{
  ?s a ?c . ?s ?p ?o . FILTER(?p != <{RDF_TYPE}>)
  OPTIONAL {{ ?o a ?oc }}
  BIND(IF(isLITERAL(?o), DATATYPE(?o), ?none) AS ?dt)
}} GROUP BY ?c ?p ?oc ?dt"""
USES = """SELECT ?p ?dt (COUNT(*) AS ?n) WHERE {
  ?s ?p ?o . BIND(IF(isLITERAL(?o), DATATYPE(?o), ?none) AS ?dt)
} GROUP BY ?p ?dt"""
UNTYPED_SUBJECTS = """SELECT ?p (COUNT(*) AS ?n) WHERE {
  ?s ?p ?o . FILTER NOT EXISTS { ?s a ?t }
} GROUP BY ?p"""
UNTYPED = "untyped"  # object of an edge to a node that has no rdf:type


@dataclass(frozen=True)
class Edge:
    subject: str  # class of the subjects
    property: str
    object: str  # class of the objects, a datatype (literal) or UNTYPED
    literal: bool
    count: int


@dataclass(frozen=True)
class Mined:
    edges: tuple[Edge, ...] = ()
    # property -> (node objects, literal objects, datatypes by frequency), over all subjects
    uses: dict[str, tuple[int, int, tuple[str, ...]]] = field(default_factory=dict)
    untyped: frozenset[str] = frozenset()  # properties some untyped subject uses

    @classmethod
    def read(cls, store: GraphStore) -> Mined:
        edges: Counter[tuple[str, str, str, bool]] = Counter()
        for row in store.query(EDGES, union=True):
            c, p = row["c"], row["p"]
            if not isinstance(c, ox.NamedNode) or _bookkeeping(c, p, row["oc"]):
                continue
            literal = row["dt"] is not None
            obj = row["dt"] if literal else row["oc"]
            edges[(c.value, p.value, obj.value if isinstance(obj, ox.NamedNode) else UNTYPED,
                   literal)] += int(row["n"].value)
        counts: dict[str, list] = {}
        for row in store.query(USES, union=True):
            if _bookkeeping(row["p"]):
                continue
            entry = counts.setdefault(row["p"].value, [0, 0, Counter()])
            n = int(row["n"].value)
            if row["dt"] is None:
                entry[0] += n
            else:
                entry[1] += n
                entry[2][row["dt"].value] += n
        return cls(edges=tuple(Edge(subject=s, property=p, object=o, literal=lit, count=n)
                               for (s, p, o, lit), n in sorted(edges.items())),
                   uses={p: (a, b, tuple(d for d, _ in dts.most_common()))
                         for p, (a, b, dts) in counts.items()},
                   untyped=frozenset(r["p"].value for r in store.query(UNTYPED_SUBJECTS,
                                                                         union=True)
                                     if not _bookkeeping(r["p"])))

    def literal_only(self, prop: str) -> bool:
        nodes, literals, _ = self.uses.get(prop, (0, 0, ()))
        return literals > 0 and nodes == 0

    def datatype(self, prop: str, subjects: tuple[str, ...] = ()) -> str | None:
        """Most frequent datatype of the property's literals (from subjects of these classes
        when given and seen); None when it holds no literals."""
        seen = Counter({e.object: e.count for e in self.edges
                        if e.property == prop and e.literal and e.subject in subjects})
        if seen:
            return seen.most_common(1)[0][0]
        datatypes = self.uses.get(prop, (0, 0, ()))[2]
        return datatypes[0] if datatypes else None


def merge(ir: OntologyIR, mined: Mined, *, hints: dict[str, str] | None = None) -> OntologyIR:
    """The IR plus the classes and properties only the data declares (as external terms), and a
    prefix for every namespace they use (the name `hints` give it, e.g. the prefixes the data
    files declare, else a derived one)."""
    classes = dict(ir.classes)
    for iri in sorted({e.subject for e in mined.edges}
                      | {e.object for e in mined.edges if not e.literal and e.object != UNTYPED}):
        if iri not in classes:
            classes[iri] = ClassInfo(iri=iri, name=local(iri), label=local(iri), external=True,
                                     ontology=DATA_SOURCE)
    properties = dict(ir.properties)
    for prop, (nodes, literals, datatypes) in sorted(mined.uses.items()):
        if prop in properties or prop == RDF_TYPE:
            continue
        edges = [e for e in mined.edges if e.property == prop]
        objects = sorted({e.object for e in edges if not e.literal and e.object != UNTYPED})
        properties[prop] = PropertyInfo(
            iri=prop, name=local(prop), label=local(prop), ontology=DATA_SOURCE,
            kind="object" if nodes >= literals else "datatype",
            domain=() if prop in mined.untyped else tuple(sorted({e.subject for e in edges})),
            range=tuple(objects) if nodes >= literals else datatypes[:1])
    prefixes = dict(ir.prefixes)
    named = {ns: name for name, ns in (hints or {}).items() if name not in prefixes}
    for iri in [*classes, *properties]:
        add_prefix(prefixes, iri, named)
    return ir.model_copy(update={"classes": classes, "properties": properties,
                                 "prefixes": dict(sorted(prefixes.items()))})


def add_prefix(prefixes: dict[str, str], iri: str, named: dict[str, str] | None = None) -> None:
    """Name the namespace of `iri` when no prefix covers it: the name `named` gives it, its
    usual prefix, else its last path segment (``http://example.org/data/Sensor`` -> ``data``)."""
    namespace = iri[: len(iri) - len(local(iri))]
    if not namespace or any(iri.startswith(ns) and re.fullmatch(r"[\w-]*", iri[len(ns):])
                            for ns in prefixes.values()):
        return
    stem = (named or {}).get(namespace) or KNOWN_PREFIXES.get(namespace) or re.sub(
        r"[^a-z0-9]+", "_", namespace.rstrip("#/").rsplit("/", 1)[-1].lower()).strip("_")
    stem = stem if re.match(r"[a-z]", stem or "") else "ns"
    name, n = stem, 1
    while name in prefixes:
        n += 1
        name = f"{stem}{n}"
    prefixes[name] = namespace


def _bookkeeping(*terms) -> bool:
    return any(isinstance(t, ox.NamedNode) and t.value.startswith(KG) for t in terms)


def local(iri: str) -> str:
    """Local name after the last ``#``, ``/`` or ``:``.

    >>> local("http://www.w3.org/ns/sosa/Sensor"), local("urn:x:y")
    ('Sensor', 'y')
    """
    return re.split(r"[/#:]", iri.rstrip("/#"))[-1]
