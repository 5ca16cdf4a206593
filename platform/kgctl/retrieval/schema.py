"""The schema view retrieval needs: the IR class graph, type checks and ranked schema paths.

Paths run over the class-level schema graph in either direction: the edges the instance data
uses (mined, with counts: :mod:`kgctl.retrieval.mining`) merged with the object properties of the
T-Box. A property is usable from a class when its domain is that class, an ancestor or a
sub-class (the pattern then narrows the type), or when the data uses it from that class. An edge
the data uses costs 1, a T-Box edge it never uses ``UNUSED_EDGE_COST``, so the shortest paths are
the ones the data can satisfy; among equally short ones the most used come first.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter

from pydantic import BaseModel, ConfigDict

from kgctl.ontology.ir import OntologyIR, PropertyInfo
from kgctl.retrieval.comparisons import NUMERIC, TEMPORAL
from kgctl.retrieval.mining import UNTYPED, Mined
from kgctl.retrieval.terms import PathStep

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
XSD = "http://www.w3.org/2001/XMLSchema#"
# the names things are given by, in the vocabularies most graphs use (a class's template reads
# the one its instances use most)
NAME_PREDICATES = (
    RDFS_LABEL, "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://xmlns.com/foaf/0.1/name", "http://schema.org/name", "https://schema.org/name",
    "http://purl.org/dc/terms/title", "http://purl.org/dc/elements/1.1/title",
    "http://www.w3.org/2004/02/skos/core#altLabel",
)
# other literal properties whose local name reads like a name, title, formula or identifier
LABELLIKE = re.compile(r"(label|name|title|formula|number|identifier|symbol)", re.IGNORECASE)
TEXT_TYPES = (XSD + "string", "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")
UNUSED_EDGE_COST = 5.0
USED_EDGE_COST = 1.0
MAX_PATH_HOPS = 4
MAX_PATH_OPTIONS = 5
NUMERIC_TYPES = NUMERIC


class Hop(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    property: str
    inverse: bool  # True: walk from the range side to the domain side
    to_class: str
    count: int = 0  # triples of the data that use this edge
    either: str = ""  # the declared inverse of `property`, walked the other way too

    def step(self) -> PathStep:
        return PathStep(iri=self.property, inverse=self.inverse, either=self.either)


class SchemaPath(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    hops: tuple[Hop, ...]
    cost: float
    support: int  # smallest instance count along the path

    def describe(self, ir: OntologyIR) -> str:
        return " / ".join(h.step().render({p: ns for p, ns in ir.prefixes.items() if p})
                          for h in self.hops)


class Schema:
    """Pure view of an IR (merged with the mined schema) and the mined schema graph."""

    def __init__(self, ir: OntologyIR, *, mined: Mined | None = None):
        self.ir = ir
        self.mined = mined or Mined()
        self._edges: dict[str, list[Hop]] = {}
        self._used: set[tuple[str, str]] = {(e.subject, e.property) for e in self.mined.edges}

    # -- names -------------------------------------------------------------------------------
    def expand(self, name: str) -> str:
        """IRI of a CURIE, a full IRI, or a bare local name known to the IR; '' if unknown."""
        text = name.strip().strip("<>")
        if text in self.ir.classes or text in self.ir.properties or text == RDFS_LABEL:
            return text
        prefix, sep, local = text.partition(":")
        if sep and prefix in self.ir.prefixes and not local.startswith("//"):
            return self.ir.prefixes[prefix] + local
        if sep and local.startswith("//"):
            return ""
        # a bare local name, or one under a prefix this graph names otherwise: unique local name
        name = local if sep else text
        matches = [i for i in (*self.ir.classes, *self.ir.properties) if _local(i) == name]
        return matches[0] if len(matches) == 1 else ""

    def cls(self, name: str) -> str | None:
        iri = self.expand(name)
        return iri if iri in self.ir.classes else None

    def prop(self, name: str) -> PropertyInfo | None:
        iri = self.expand(name)
        return self.ir.properties.get(iri)

    def near_names(self, name: str, *, kind: str, limit: int = 5) -> list[str]:
        """Closest class or property CURIEs to a misspelt name (for feedback)."""
        from rapidfuzz import process  # imported lazily: only feedback needs it

        pool = self.ir.classes if kind == "class" else self.ir.properties
        names = {self.ir.curie(i): _local(i) for i in pool}
        found = process.extract(_local(name), names, limit=limit)
        return [key for _, _, key in found]

    # -- types -------------------------------------------------------------------------------
    def compatible(self, a: str, b: str) -> bool:
        """True when one class is the other or below it."""
        return self.ir.is_a(a, b) or self.ir.is_a(b, a)

    def narrower(self, a: str, b: str) -> str:
        return a if self.ir.is_a(a, b) else b

    def usable_from(self, cls: str, prop: PropertyInfo) -> bool:
        """Domain check for a subject of class `cls` (unrestricted domain admits all), or the
        data uses the property from that class or one of its sub-classes."""
        return (not prop.domain or any(self.compatible(cls, d) for d in prop.domain)
                or any((c, prop.iri) in self._used for c in self.type_constraint(cls)))

    def end_classes(self, prop: PropertyInfo, *, inverse: bool) -> tuple[str, ...]:
        """Classes the T-Box admits at the far end of a hop (range, or domain when inverse)."""
        return tuple(c for c in (prop.domain if inverse else prop.range) if c in self.ir.classes)

    def accepts_object(self, prop: PropertyInfo, cls: str) -> bool:
        return not prop.range or any(self.compatible(cls, r) for r in prop.range)

    def type_constraint(self, cls: str) -> tuple[str, ...]:
        """Classes an instance of `cls` may be typed with: itself and every sub-class."""
        return self.ir.subclasses(cls) or (cls,)

    def datatype_of(self, prop: PropertyInfo, subjects: tuple[str, ...] = ()) -> str:
        """The datatype of a property's values: the T-Box's, else the one the data uses."""
        declared = next((r for r in prop.range if r.startswith(XSD) and r != XSD + "anyType"),
                        None)
        return declared or self.mined.datatype(prop.iri, subjects) or XSD + "string"

    def mixed_temporal(self, prop: str) -> bool:
        """The data stores the property's values in more than one temporal type."""
        return len({d for d in self.mined.uses.get(prop, (0, 0, ()))[2] if d in TEMPORAL}) > 1

    def holds_literals(self, prop: PropertyInfo) -> bool:
        """A datatype property, or an object property the data fills with literals only."""
        return prop.kind != "object" or self.mined.literal_only(prop.iri)

    def label_properties(self) -> tuple[str, ...]:
        """Predicates whose text names a node: the usual name predicates, and the text-valued
        properties (declared or used) whose local name reads like a name or identifier."""
        found = set(NAME_PREDICATES)
        for prop in self.ir.properties.values():
            if prop.kind == "datatype" and LABELLIKE.search(prop.name) and (
                    not prop.range or prop.range[0] in TEXT_TYPES):
                found.add(prop.iri)
        for iri, (_, literals, datatypes) in self.mined.uses.items():
            if literals and LABELLIKE.search(_local(iri)) and (
                    not datatypes or datatypes[0] in TEXT_TYPES):
                found.add(iri)
        return tuple(sorted(found))

    def label_property(self, cls: str) -> str:
        """The name predicate instances of `cls` use most (rdfs:label when they use none)."""
        below = set(self.type_constraint(cls))
        used: Counter[str] = Counter()
        for e in self.mined.edges:
            if e.literal and e.subject in below and e.property in NAME_PREDICATES:
                used[e.property] += e.count
        return max(used, key=lambda p: (used[p], p == RDFS_LABEL)) if used else RDFS_LABEL

    # -- paths -------------------------------------------------------------------------------
    def edges_from(self, cls: str) -> list[Hop]:
        if cls not in self._edges:
            self._edges[cls] = self._edges_from(cls)
        return self._edges[cls]

    def _edges_from(self, cls: str) -> list[Hop]:
        """Mined edges from (or, inverse, to) instances of `cls`, lifted to the T-Box's range or
        domain class when that covers every class the data links to, plus the T-Box edges the
        data does not use (count 0)."""
        below = set(self.type_constraint(cls))
        seen: dict[tuple[str, bool], Counter[str]] = {}
        for e in self.mined.edges:
            if e.literal or e.object == UNTYPED:
                continue
            if e.subject in below:
                seen.setdefault((e.property, False), Counter())[e.object] += e.count
            if e.object in below:
                seen.setdefault((e.property, True), Counter())[e.subject] += e.count
        hops: list[Hop] = []
        for (prop, inverse), ends in sorted(seen.items()):
            info = self.ir.properties.get(prop)
            declared = self.end_classes(info, inverse=inverse) if info else ()
            lifted: Counter[str] = Counter()
            for end, n in ends.items():
                cover = [d for d in declared if self.ir.is_a(end, d)]
                lifted[cover[0] if cover else end] += n
            hops += [Hop(property=prop, inverse=inverse, to_class=c, count=n)
                     for c, n in sorted(lifted.items())]
        known = {(h.property, h.inverse, h.to_class) for h in hops}
        for prop in self.ir.properties.values():
            if prop.kind != "object":
                continue
            ranges = self.end_classes(prop, inverse=False)
            if any(self.compatible(cls, d) for d in prop.domain):
                hops += [Hop(property=prop.iri, inverse=False, to_class=r) for r in ranges
                         if (prop.iri, False, r) not in known]
            if any(self.compatible(cls, r) for r in ranges):
                hops += [Hop(property=prop.iri, inverse=True, to_class=d) for d in prop.domain
                         if (prop.iri, True, d) not in known]
        return self._pair_inverses(hops)

    def _pair_inverses(self, hops: list[Hop]) -> list[Hop]:
        """Merge ``p`` and ``^q`` to the same class when q is declared the inverse of p: one hop
        that follows the link whichever way the data states it."""
        out: dict[tuple[str, bool, str], Hop] = {(h.property, h.inverse, h.to_class): h
                                                 for h in hops}
        for hop in hops:
            inverse = self._inverse(hop.property)
            twin = out.get((inverse, not hop.inverse, hop.to_class)) if inverse else None
            if twin is None or (hop.property, hop.inverse, hop.to_class) not in out:
                continue
            del out[(inverse, not hop.inverse, hop.to_class)]
            out[(hop.property, hop.inverse, hop.to_class)] = hop.model_copy(update={
                "either": inverse, "count": hop.count + twin.count})
        return list(out.values())

    def _inverse(self, prop: str) -> str:
        info = self.ir.properties.get(prop)
        if info and info.inverse_of:
            return info.inverse_of
        return next((p.iri for p in self.ir.properties.values() if p.inverse_of == prop), "")

    def paths(self, start: str, goal: str, *, limit: int = MAX_PATH_OPTIONS) -> list[SchemaPath]:
        """Cheapest schema paths from class `start` to class `goal`, ranked: cost, then
        support (the smallest edge count along the path), then text; at most `limit`."""
        found: list[SchemaPath] = []
        queue: list[tuple[float, int, tuple[Hop, ...], str]] = [(0.0, 0, (), start)]
        pushed = 0  # tie-breaker: the heap never compares hops
        visits: dict[str, int] = {}
        while queue and len(found) < limit * 2:
            cost, _, hops, at = heapq.heappop(queue)
            if hops and self.compatible(at, goal):
                found.append(self._path(hops, cost))
                continue
            visits[at] = visits.get(at, 0) + 1
            if visits[at] > limit or len(hops) >= MAX_PATH_HOPS:
                continue
            seen = {start, *(h.to_class for h in hops)}
            for hop in self.edges_from(at):
                closes = hop.to_class == start == goal  # a link between two of `start`
                if (hop.to_class in seen and not closes) or (
                        hops and _same_edge_back(hops[-1], hop)):
                    continue
                step = USED_EDGE_COST if hop.count else UNUSED_EDGE_COST
                pushed += 1
                heapq.heappush(queue, (cost + step, pushed, (*hops, hop), hop.to_class))
        unique = {p.describe(self.ir) + "|" + p.hops[-1].to_class: p for p in found}
        ranked = sorted(unique.values(), key=lambda p: (p.cost, -p.support, p.describe(self.ir)))
        return ranked[:limit]

    def _path(self, hops: tuple[Hop, ...], cost: float) -> SchemaPath:
        support = min(h.count for h in hops)
        return SchemaPath(hops=hops, cost=cost, support=support)


def snake(name: str) -> str:
    """Variable-friendly form of a local name.

    >>> snake("FeatureOfInterest"), snake("hasCCDCNumber"), snake("om-2:Temperature")
    ('feature_of_interest', 'has_ccdc_number', 'temperature')
    """
    local = _local(name)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", local)
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_").lower() or "x"


def _local(iri: str) -> str:
    return re.split(r"[/#:]", iri.rstrip("/#"))[-1]


def _same_edge_back(last: Hop, hop: Hop) -> bool:
    return last.property == hop.property and last.inverse != hop.inverse
