"""The schema view retrieval needs: the IR class graph, type checks and ranked schema paths.

Paths run over object properties in either direction. A property is usable from a class when
its domain is that class, an ancestor or a sub-class (the pattern then narrows the type). Edge
costs come from instance statistics: a property with triples in the store costs 1, an unused
one ``UNUSED_EDGE_COST``, so the shortest paths are the ones the data can satisfy.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from kgctl.ontology.ir import OntologyIR, PropertyInfo

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
XSD = "http://www.w3.org/2001/XMLSchema#"
UNUSED_EDGE_COST = 5.0
USED_EDGE_COST = 1.0
MAX_PATH_HOPS = 4
MAX_PATH_OPTIONS = 5
NUMERIC_TYPES = tuple(XSD + t for t in ("integer", "int", "long", "double", "float", "decimal"))


class Hop(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    property: str
    inverse: bool  # True: walk from the range side to the domain side
    to_class: str


class SchemaPath(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    hops: tuple[Hop, ...]
    cost: float
    support: int  # smallest instance count along the path

    def describe(self, ir: OntologyIR) -> str:
        return " / ".join(("^" if h.inverse else "") + ir.curie(h.property) for h in self.hops)


class Schema:
    """Pure view of an IR plus instance statistics (property -> triple count)."""

    def __init__(self, ir: OntologyIR, *, property_counts: Mapping[str, int] | None = None):
        self.ir = ir
        self.counts = dict(property_counts or {})
        self._edges: dict[str, list[Hop]] = {}

    # -- names -------------------------------------------------------------------------------
    def expand(self, name: str) -> str:
        """IRI of a CURIE, a full IRI, or a bare local name known to the IR; '' if unknown."""
        text = name.strip().strip("<>")
        if text in self.ir.classes or text in self.ir.properties or text == RDFS_LABEL:
            return text
        prefix, sep, local = text.partition(":")
        if sep and prefix in self.ir.prefixes and not local.startswith("//"):
            return self.ir.prefixes[prefix] + local
        matches = [i for i in (*self.ir.classes, *self.ir.properties) if _local(i) == text]
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
        """Domain check for a subject of class `cls` (unrestricted domain admits all)."""
        return not prop.domain or any(self.compatible(cls, d) for d in prop.domain)

    def accepts_object(self, prop: PropertyInfo, cls: str) -> bool:
        return not prop.range or any(self.compatible(cls, r) for r in prop.range)

    def type_constraint(self, cls: str) -> tuple[str, ...]:
        """Classes an instance of `cls` may be typed with: itself and every sub-class."""
        return self.ir.subclasses(cls) or (cls,)

    def datatype_of(self, prop: PropertyInfo) -> str:
        return prop.range[0] if prop.range else XSD + "string"

    # -- paths -------------------------------------------------------------------------------
    def edges_from(self, cls: str) -> list[Hop]:
        if cls not in self._edges:
            self._edges[cls] = self._edges_from(cls)
        return self._edges[cls]

    def _edges_from(self, cls: str) -> list[Hop]:
        hops: list[Hop] = []
        for prop in self.ir.properties.values():
            if prop.kind != "object":
                continue
            ranges = [r for r in prop.range if r in self.ir.classes]
            if any(self.compatible(cls, d) for d in prop.domain):
                hops += [Hop(property=prop.iri, inverse=False, to_class=r) for r in ranges]
            if any(self.compatible(cls, r) for r in ranges):
                hops += [Hop(property=prop.iri, inverse=True, to_class=d) for d in prop.domain]
        return hops

    def paths(self, start: str, goal: str) -> list[SchemaPath]:
        """Cheapest schema paths from class `start` to class `goal`, ranked: cost, then
        support (instances along the path), then text; at most MAX_PATH_OPTIONS."""
        found: list[SchemaPath] = []
        queue: list[tuple[float, int, tuple[Hop, ...], str]] = [(0.0, 0, (), start)]
        pushed = 0  # tie-breaker: the heap never compares hops
        visits: dict[str, int] = {}
        while queue and len(found) < MAX_PATH_OPTIONS * 2:
            cost, _, hops, at = heapq.heappop(queue)
            if hops and self.compatible(at, goal):
                found.append(self._path(hops, cost))
                continue
            visits[at] = visits.get(at, 0) + 1
            if visits[at] > MAX_PATH_OPTIONS or len(hops) >= MAX_PATH_HOPS:
                continue
            seen = {start, *(h.to_class for h in hops)}
            for hop in self.edges_from(at):
                if hop.to_class in seen or (hops and _same_edge_back(hops[-1], hop)):
                    continue
                step = USED_EDGE_COST if self.counts.get(hop.property) else UNUSED_EDGE_COST
                pushed += 1
                heapq.heappush(queue, (cost + step, pushed, (*hops, hop), hop.to_class))
        unique = {p.describe(self.ir) + "|" + p.hops[-1].to_class: p for p in found}
        ranked = sorted(unique.values(), key=lambda p: (p.cost, -p.support, p.describe(self.ir)))
        return ranked[:MAX_PATH_OPTIONS]

    def _path(self, hops: tuple[Hop, ...], cost: float) -> SchemaPath:
        support = min(self.counts.get(h.property, 0) for h in hops)
        return SchemaPath(hops=hops, cost=cost, support=support)


def snake(name: str) -> str:
    """Variable-friendly form of a local name.

    >>> snake("ChemicalSynthesis"), snake("hasCCDCNumber"), snake("om-2:Temperature")
    ('chemical_synthesis', 'has_ccdc_number', 'temperature')
    """
    local = _local(name)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", local)
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_").lower() or "x"


def _local(iri: str) -> str:
    return re.split(r"[/#:]", iri.rstrip("/#"))[-1]


def _same_edge_back(last: Hop, hop: Hop) -> bool:
    return last.property == hop.property and last.inverse != hop.inverse
