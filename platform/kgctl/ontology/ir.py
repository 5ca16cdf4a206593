"""The intermediate model (IR) of one or more T-Boxes plus their profiles.

Everything downstream (tool compiler, plan, prompts, evaluation queries, retrieval) reads only
this model. It is frozen, holds induced facts (inherited domains, merged cardinalities, units of
each quantity kind) and serialises to byte-identical JSON for the same inputs.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"  # profiles may enumerate labels


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Source(Frozen):
    """Where a rule comes from: an OWL axiom in a T-Box file or a line of a profile."""

    kind: Literal["owl", "profile"]
    file: str  # file name only, never an absolute path (keeps the IR reproducible)
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class ClassInfo(Frozen):
    iri: str
    name: str  # local name, e.g. "HeatChill"
    label: str  # rdfs:label or the local name
    comment: str = ""  # rdfs:comment: soft constraints, shown to agents, never enforced
    parents: tuple[str, ...] = ()  # direct named super-classes
    ancestors: tuple[str, ...] = ()  # all named super-classes, nearest first (induced)
    disjoint_with: tuple[str, ...] = ()
    abstract: bool = False  # profile: only sub-classes may be instantiated
    # profile: "occurrence" = every creation mints a fresh node; "label" = reused within a paper
    # by normalised label (vessels, suppliers, devices, environments ...)
    identity: Literal["occurrence", "label"] = "occurrence"
    # profile: natural key of a reused class: found-or-created and minted by the normalised value
    # of this datatype property instead of by label (the label becomes an optional name)
    key: str | None = None
    key_source: Source | None = None
    # profile: what a verification pass checks for this class (prose for agents, not enforced)
    verify: str = ""
    # profile: instances may exist without the entity that usually points to them (an entity known
    # only by its deposition number), so the class gets a create tool of its own
    standalone: bool = False
    ontology: str = ""  # file it was declared in
    # referenced (super-class, domain, range, filler) but declared in none of the loaded T-Boxes
    external: bool = False
    deprecated: bool = False  # owl:deprecated true: kept for references, never offered
    # owl:oneOf definition: the class is exactly these individuals (no new instances)
    one_of: tuple[str, ...] = ()


class PropertyInfo(Frozen):
    iri: str
    name: str
    label: str
    comment: str = ""
    kind: Literal["object", "datatype", "annotation"]
    domain: tuple[str, ...] = ()  # named classes, owl:unionOf expanded; empty = unrestricted
    range: tuple[str, ...] = ()  # classes (object) or datatype IRIs (datatype)
    inverse_of: str | None = None
    functional: bool = False
    parents: tuple[str, ...] = ()  # rdfs:subPropertyOf
    ontology: str = ""
    deprecated: bool = False
    # xsd facets of a restricted datatype range (minInclusive, maxInclusive, pattern, ...)
    facets: dict[str, str] = {}


class Restriction(Frozen):
    """An OWL restriction (or profile rule of the same shape) on a class."""

    on_class: str
    on_property: str
    kind: Literal["some", "all", "min", "max", "exact", "has_value"]
    cardinality: int | None = None
    filler: str | None = None  # qualified class/datatype, or the value of has_value
    fillers: tuple[str, ...] = ()  # members of a blank filler (owl:unionOf classes, owl:oneOf)
    # on the inverse of `on_property` (owl:inverseOf q with no named inverse declared)
    inverse: bool = False
    source: Source


class Cardinality(Frozen):
    """Merged min/max for (class, property), induced down the class hierarchy."""

    on_class: str
    on_property: str
    min: int = 0
    max: int | None = None
    sources: tuple[Source, ...] = ()
    # the minimum is stated by OWL axioms only (someValuesFrom, min/exact cardinality) and the
    # profile leaves existentials soft: a missing value is recorded, not refused
    soft: bool = False


class Enumeration(Frozen):
    """Allowed values of a property on a class (literals or IRIs)."""

    on_class: str | None = None  # None: wherever the property is used
    on_property: str
    values: tuple[str, ...]
    source: Source


class OrderingRule(Frozen):
    """Ordered members: `order_property` values of the members reached by `member_property`
    from one container are unique and, if contiguous, exactly start..N."""

    container_class: str
    member_property: str
    order_property: str
    start: int = 1
    contiguous: bool = True
    source: Source


class Unit(Frozen):
    iri: str
    name: str
    label: str
    category: str  # unit class IRI, e.g. om-2:TemperatureUnit


class QuantityKind(Frozen):
    iri: str  # quantity class, e.g. om-2:Temperature
    label: str
    unit_category: str
    units: tuple[str, ...]  # allowed unit IRIs, sorted
    value_property: str  # e.g. om-2:hasNumericalValue
    unit_property: str  # e.g. om-2:hasUnit
    minimum: float | None = None  # profile: lowest numerical value (0: cannot be negative)
    source: Source


class UnitAlias(Frozen):
    """A unit spelling a profile adds to the alias tables (beside the shipped alias file)."""

    spelling: str
    unit: str
    source: Source


class ToolOffer(Frozen):
    """Profile: tools of an external MCP server offered in the plan steps that create one of
    `classes` (as their entity or inline)."""

    classes: tuple[str, ...]
    tools: tuple[str, ...]
    tokens: int  # what the tools' listing adds to a step's turn (tests check it on the server)
    prompt: str  # how to use them, added to the step's system message
    source: Source


class ToolServerInfo(Frozen):
    """Profile: an external, read-only MCP server (e.g. chemistry) whose tools plan steps offer.
    The agent starts `command` over stdio unless it is given a URL for `name`; a `probe` call
    that fails means the server's tools are not available in this run."""

    name: str
    command: tuple[str, ...]
    probe: str | None = None  # a tool to call once at start ...
    probe_arguments: dict[str, Any] = {}  # ... with these arguments
    offers: tuple[ToolOffer, ...]
    source: Source


class Individual(Frozen):
    """A named individual of the T-Boxes (not a unit): usable as a value of its classes."""

    iri: str
    name: str
    label: str
    types: tuple[str, ...]


class OntologyIR(Frozen):
    ontologies: tuple[str, ...] = ()  # file names in load order
    prefixes: dict[str, str] = {}  # prefix -> namespace
    top_level: tuple[str, ...] = ()  # profile: the entity a paper's extraction starts from
    classes: dict[str, ClassInfo] = {}
    properties: dict[str, PropertyInfo] = {}
    restrictions: tuple[Restriction, ...] = ()
    cardinalities: tuple[Cardinality, ...] = ()
    enumerations: tuple[Enumeration, ...] = ()
    orderings: tuple[OrderingRule, ...] = ()
    quantities: dict[str, QuantityKind] = {}
    units: dict[str, Unit] = {}
    unit_aliases: dict[str, str] = {}  # lower-cased spelling -> unit IRI
    # spellings whose case matters ("mM" is not "mm", "M" is not "m") -> unit IRI
    unit_spellings: dict[str, str] = {}
    profile_unit_aliases: tuple[UnitAlias, ...] = ()  # merged into the two tables above
    individuals: dict[str, Individual] = {}
    tool_servers: tuple[ToolServerInfo, ...] = ()  # profile: external tools for plan steps
    # OWL someValuesFrom / min-cardinality at creation: "soft" records a missing value (open
    # world: an unstated filler is not an error), "hard" (a profile's `existentials: hard`)
    # refuses the entity
    existentials: Literal["soft", "hard"] = "soft"

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, no dates, no absolute paths."""
        data = self.model_dump(mode="json")
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)

    # Induced views: pure functions of the fields above.

    def curie(self, iri: str) -> str:
        """Shortest prefixed name for an IRI, or the IRI itself (remembered: tools ask for the
        same few names on every call)."""
        if iri not in self._curies:
            best, longest = "", 0
            for prefix, ns in self.prefixes.items():
                if prefix and iri.startswith(ns) and len(ns) > longest:
                    best, longest = prefix, len(ns)
            self._curies[iri] = f"{best}:{iri[len(self.prefixes[best]):]}" if best else iri
        return self._curies[iri]

    @cached_property
    def _curies(self) -> dict[str, str]:
        return {}

    def is_a(self, cls: str, ancestor: str) -> bool:
        """True when `cls` is `ancestor` or one of its sub-classes."""
        return cls == ancestor or (cls in self.classes and ancestor in self.classes[cls].ancestors)

    @cached_property
    def _below(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {c: [c] for c in self.classes}
        for cls, info in self.classes.items():
            for ancestor in info.ancestors:
                found.setdefault(ancestor, []).append(cls)
        return {c: tuple(sorted(set(below))) for c, below in found.items()}

    def subclasses(self, cls: str) -> tuple[str, ...]:
        """All named classes that are `cls` or below it, sorted."""
        return self._below.get(cls, ())

    @cached_property
    def _restricted(self) -> dict[str, frozenset[str]]:
        """Class -> properties an OWL restriction on it names (a domain stated by axiom)."""
        found: dict[str, set[str]] = {}
        for rule in self.restrictions:
            if rule.source.kind == "owl" and not rule.inverse:
                found.setdefault(rule.on_class, set()).add(rule.on_property)
        return {c: frozenset(ps) for c, ps in found.items()}

    @cached_property
    def _by_domain(self) -> dict[str, frozenset[str]]:
        """Class -> properties whose stated domain names it."""
        found: dict[str, set[str]] = {}
        for prop in self.properties.values():
            for cls in prop.domain:
                found.setdefault(cls, set()).add(prop.iri)
        return {c: frozenset(ps) for c, ps in found.items()}

    def own_properties(self, cls: str) -> frozenset[str]:
        """Properties whose domain or an OWL restriction names `cls` itself."""
        return self._by_domain.get(cls, frozenset()) | self._restricted.get(cls, frozenset())

    @cached_property
    def _properties_memo(self) -> dict[str, tuple[PropertyInfo, ...]]:
        return {}

    def properties_of(self, cls: str) -> tuple[PropertyInfo, ...]:
        """Properties whose domain admits `cls` (directly or through an ancestor), or that an
        OWL restriction on its lineage names; by IRI (memoised: linear in the T-Box)."""
        memo = self._properties_memo
        if cls not in memo:
            lineage = {cls, *self.classes[cls].ancestors} if cls in self.classes else {cls}
            none: frozenset[str] = frozenset()
            names = none.union(*(self._restricted.get(c, none) for c in lineage),
                               *(self._by_domain.get(c, none) for c in lineage))
            memo[cls] = tuple(self.properties[p] for p in sorted(names) if p in self.properties)
        return memo[cls]

    def applies(self, cls: str, prop: str) -> bool:
        """Whether `prop` may be used on `cls`: its domain admits it, an axiom names it, or
        the T-Box states no domain at all."""
        info = self.properties.get(prop)
        if info is None:
            return False
        return not info.domain or any(p.iri == prop for p in self.properties_of(cls))

    @cached_property
    def _cardinality_index(self) -> dict[tuple[str, str], Cardinality]:
        found: dict[tuple[str, str], Cardinality] = {}
        for card in self.cardinalities:
            found.setdefault((card.on_class, card.on_property), card)
        return found

    def cardinality(self, cls: str, prop: str) -> Cardinality:
        """Merged cardinality of `prop` on `cls`, inherited from ancestors; unbounded if none."""
        lineage = (cls, *self.classes[cls].ancestors) if cls in self.classes else (cls,)
        for owner in lineage:
            card = self._cardinality_index.get((owner, prop))
            if card is not None:
                return card
        return Cardinality(on_class=cls, on_property=prop)

    @cached_property
    def _enumeration_index(self) -> dict[tuple[str | None, str], Enumeration]:
        found: dict[tuple[str | None, str], Enumeration] = {}
        for enum in self.enumerations:
            found.setdefault((enum.on_class, enum.on_property), enum)
        return found

    def enumeration(self, cls: str, prop: str) -> Enumeration | None:
        """Allowed values of `prop` on `cls` (class-specific rule first, then a global one)."""
        lineage = (cls, *self.classes[cls].ancestors) if cls in self.classes else (cls,)
        index = self._enumeration_index
        for owner in (*lineage, None):
            if (owner, prop) in index:
                return index[(owner, prop)]
        return None

    def quantity_of(self, prop: str) -> QuantityKind | None:
        """The quantity kind a property points to, when its range is an OM-2 quantity."""
        for rng in self.properties[prop].range if prop in self.properties else ():
            if rng in self.quantities:
                return self.quantities[rng]
        return None

    def resolve_unit(self, spelling: str, quantity: str | None = None) -> str | None:
        """Unit IRI for a spelling (alias, local name, label or IRI), optionally restricted to
        the units allowed for a quantity kind; None when unknown or not allowed."""
        text = spelling.strip()
        iri = (
            text if text in self.units
            else self.unit_spellings.get(text)
            or self.unit_aliases.get(text.lower())
            or next((u.iri for u in self.units.values()
                     if text.lower() in (u.name.lower(), u.label.lower())), None)
        )
        if iri is None or (quantity is not None and iri not in self.quantities[quantity].units):
            return None
        return iri
