"""Compile an IR into the tool surface: a pure, deterministic function.

Pipeline: classify classes (top-level, ordered members, owned occurrences, label-identified
auxiliaries) -> one `create_` tool per root or ordered class, one `add_` tool per ownership
property, generic link/read/repair tools -> argument specs -> pydantic models -> JSON schemas.
Nothing here knows a domain: every name, type, unit and enumeration comes from the IR.
"""

from __future__ import annotations

from kgctl.compiler.bounded import bounded_surface
from kgctl.compiler.budget import MAX_ARGUMENTS, surface_fits
from kgctl.compiler.creation import CreationRules
from kgctl.compiler.generic import DRY_RUN, EVIDENCE, LINKS, READ, REF, REPAIR, generic_tools
from kgctl.compiler.names import prefixed_name, unique_words
from kgctl.compiler.naming import arg_name, is_opaque, local_name, readable, snake
from kgctl.compiler.schema import input_schema
from kgctl.compiler.spec import ArgSpec, ToolSpec, ToolSurface
from kgctl.ontology.ir import OntologyIR, PropertyInfo

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
XSD = "http://www.w3.org/2001/XMLSchema#"
# nesting depth of inline objects (an Add with its ChemicalInput with its Supplier)
MAX_INLINE_DEPTH = 2
CORE, PARTS, SEQUENCE = "core", "parts", "sequence"


def compile_tools(ir: OntologyIR) -> ToolSurface:
    """Every tool of the IR, sorted by tool set (in plan order) then name: per-class tools
    when they fit the token budget, else the bounded surface (`kgctl.compiler.bounded`)."""
    view = view_of(ir)
    if view.argument_estimate(limit=MAX_ARGUMENTS) > MAX_ARGUMENTS:
        return bounded_surface(view)
    surface = class_tools(ir)
    if surface_fits(ir, surface.tools, shared=(LINKS, READ, REPAIR)):
        return surface
    return bounded_surface(view)


def class_tools(ir: OntologyIR) -> ToolSurface:
    """The per-class surface whatever its size (`compile_tools` offers it when it fits the
    budget)."""
    view = view_of(ir)
    tools = _dedupe_names([*view.create_tools(), *view.add_tools(),
                           *generic_tools(soft=view.soft_minima())])
    order = view.toolsets()
    tools.sort(key=lambda t: (order.index(t.toolset), t.name))
    return ToolSurface(tools=tuple(_with_schema(t) for t in tools),
                       toolsets=tuple(order))


class _View(CreationRules):
    """Induced classification of an IR's classes and properties (read-only helper)."""

    def __init__(self, ir: OntologyIR) -> None:
        self.ir = ir
        self.member_props = {o.member_property for o in ir.orderings}
        self.unit_classes = {u.category for u in ir.units.values()}
        self._measure: dict[str, bool] = {}
        self._concretes: dict[str, tuple[str, ...]] = {}
        self._range_concretes: dict[str, tuple[str, ...]] = {}
        self._object_props: list[PropertyInfo] | None = None
        self._owning: dict[str, list[PropertyInfo]] | None = None
        self._enumerated = {e.on_property for e in ir.enumerations}
        self._fields: dict[tuple[str, int, frozenset[str]], tuple[ArgSpec, ...]] = {}
        self.words: dict[str, str] | None = None  # kgctl.compiler.lookups' memos
        self.class_names: dict[str, str] | None = None
        self.measure_props = {p for q in ir.quantities.values()
                              for p in (q.value_property, q.unit_property)}
        self.ordered = {c: o for o in ir.orderings
                        for r in self.range_of(o.member_property) for c in self.concretes(r)}
        self.restricted: dict[tuple[str, str], list] = {}
        for rule in ir.restrictions:
            if rule.source.kind == "owl" and not rule.inverse:
                self.restricted.setdefault((rule.on_class, rule.on_property), []).append(rule)
        self.group_words: dict[str, str] = {}  # tool word of a per-file create tool
        self.groups = self.create_groups()
        self.names = unique_words(ir, [c for g in self.groups.values() for c in g])

    # -- names ---------------------------------------------------------------------------------
    def class_word(self, cls: str) -> str:
        """snake_case name of a class in tool names and `type` values (unique in the surface)."""
        if cls in self.names:
            return self.names[cls]
        info = self.ir.classes.get(cls)
        return snake(readable(info.name, info.label)) if info else snake(local_name(cls))

    def prop_word(self, prop: PropertyInfo) -> str:
        return arg_name(readable(prop.name, prop.label))

    # -- classification -------------------------------------------------------------------
    def range_of(self, prop: str) -> tuple[str, ...]:
        info = self.ir.properties.get(prop)
        return info.range if info else ()

    def instantiable(self, cls: str) -> bool:
        info = self.ir.classes.get(cls)
        return (info is not None and not info.abstract and not info.external
                and not info.deprecated and not self.is_measure(cls))

    def soft_minima(self) -> bool:
        """Whether some OWL minimum is soft (recorded as missing, not refused)."""
        return any(c.soft for c in self.ir.cardinalities)

    def creatable(self, cls: str) -> bool:
        """A class `create_entity` makes: instantiable and not a fixed set of individuals."""
        return self.instantiable(cls) and not self.ir.classes[cls].one_of

    def is_measure(self, cls: str) -> bool:
        """Quantity kinds, their super-classes and unit classes: built inline, never by tools."""
        if cls not in self._measure:
            ir = self.ir
            self._measure[cls] = (
                any(ir.is_a(cls, q) or ir.is_a(q, cls) for q in ir.quantities)
                or any(ir.is_a(cls, u) or ir.is_a(u, cls) for u in self.unit_classes))
        return self._measure[cls]

    def concretes(self, cls: str) -> tuple[str, ...]:
        if cls not in self._concretes:
            self._concretes[cls] = tuple(c for c in self.ir.subclasses(cls)
                                         if self.instantiable(c))
        return self._concretes[cls]

    def range_concretes(self, prop: PropertyInfo) -> tuple[str, ...]:
        """Instantiable classes a property's range admits, declared ranges first."""
        if prop.iri not in self._range_concretes:
            found = {c for r in prop.range for c in self.concretes(r)}
            self._range_concretes[prop.iri] = (*sorted(found.intersection(prop.range)),
                                               *sorted(found.difference(prop.range)))
        return self._range_concretes[prop.iri]

    def is_label_class(self, cls: str) -> bool:
        return self.ir.classes[cls].identity == "label"

    def object_props(self) -> list[PropertyInfo]:
        if self._object_props is None:
            self._object_props = [
                p for _, p in sorted(self.ir.properties.items())
                if p.kind == "object" and p.domain and self.ir.quantity_of(p.iri) is None
                and p.iri not in self.measure_props and not self.is_back_link(p)
                and not p.deprecated]
        return self._object_props

    def is_back_link(self, prop: PropertyInfo) -> bool:
        """Of an inverse pair only one direction owns: the one from a top-level class, else
        the first by IRI. The other stays reachable through `link`."""
        other = self.ir.properties.get(prop.inverse_of or "")
        if other is None or other.kind != "object" or not other.domain:
            return False
        tops = set(self.ir.top_level)
        if tops.intersection(prop.domain) != tops.intersection(other.domain):
            return not tops.intersection(prop.domain)
        return other.iri < prop.iri

    def is_enumerated(self, prop: str) -> bool:
        return prop in self._enumerated

    def owning_props(self, cls: str) -> list[PropertyInfo]:
        """Object properties from some class that can point to `cls` (except orderings)."""
        if self._owning is None:
            self._owning = {}
            for p in self.object_props():
                if p.iri not in self.member_props and not self.is_enumerated(p.iri):
                    for target in self.range_concretes(p):
                        self._owning.setdefault(target, []).append(p)
        return self._owning.get(cls, [])

    def toolsets(self) -> list[str]:
        files = [snake(f.rsplit(".", 1)[0]) for f in self.ir.ontologies]
        others = [f for f in dict.fromkeys(files) if f not in (CORE, PARTS, SEQUENCE)]
        return [CORE, PARTS, SEQUENCE, *others, LINKS, READ, REPAIR]

    def toolset_of(self, cls: str, subject: tuple[str, ...] = ()) -> str:
        lineage = [c for s in subject for c in self.ir.subclasses(s)]
        if cls in self.ir.top_level and not subject:
            return CORE
        if any(c in self.ir.top_level for c in lineage):
            return PARTS
        if cls in self.ordered or any(c in self.ordered for c in lineage):
            return SEQUENCE
        ontology = self.ir.classes[cls].ontology if cls in self.ir.classes else ""
        return snake(ontology.rsplit(".", 1)[0]) if ontology else PARTS

    # -- argument specs ---------------------------------------------------------------------
    def describe(self, iri: str) -> str:
        info = self.ir.classes.get(iri) or self.ir.properties.get(iri)
        if info is None:
            return ""
        return f"{info.label}: {info.comment}".strip() if info.comment else info.label

    def field_args(self, cls: str, *, depth: int, skip: frozenset[str] = frozenset()
                   ) -> tuple[ArgSpec, ...]:
        """One argument per property whose domain admits `cls` (writes `cls --p--> value`);
        memoised per (class, depth, skipped properties)."""
        memo = (cls, depth, skip)
        if memo not in self._fields:
            self._fields[memo] = self._field_args(cls, depth=depth, skip=skip)
        return self._fields[memo]

    def _field_args(self, cls: str, *, depth: int, skip: frozenset[str]) -> tuple[ArgSpec, ...]:
        key = self.ir.classes[cls].key
        args = [ArgSpec(name="label", kind="label", property=RDFS_LABEL,
                        required=self.is_label_class(cls) and key is None,
                        description="name of this entity as written in the paper")]
        for prop in self.ir.properties_of(cls):
            if (prop.iri in skip or prop.iri in self.member_props or prop.kind == "annotation"
                    or prop.iri in self.measure_props or prop.deprecated
                    or self.ir.cardinality(cls, prop.iri).max == 0):
                continue
            arg = self.property_arg(cls, prop, depth=depth)
            if arg is not None and prop.iri == key:
                arg = arg.model_copy(update={"required": True, "description": (
                    f"{arg.description} (identifies the {self._label(cls)}: the same value "
                    "is the same entity)")})
            if arg is not None:
                args.append(arg)
        return tuple(self.unique_names(args))

    def unique_names(self, args: list[ArgSpec]) -> list[ArgSpec]:
        """Arguments whose names collide (hasChemicalFormula of two ontologies) are prefixed
        with their property's ontology prefix; the others keep their plain name."""
        count: dict[str, int] = {}
        for arg in args:
            count[arg.name] = count.get(arg.name, 0) + 1
        return [a if count[a.name] == 1 or a.property is None or a.property == RDFS_LABEL
                else a.model_copy(update={"name": prefixed_name(self.ir, a.property, a.name)})
                for a in args]

    def stated(self, cls: str, prop: str) -> dict[str, str]:
        """OWL restriction kind -> filler on `cls` or an ancestor for `prop`: the datatype an
        allValuesFrom narrows a range to (or a someValuesFrom / qualified cardinality names
        where no range is declared), whether a hasValue gives the value."""
        lineage = (cls, *self.ir.classes[cls].ancestors) if cls in self.ir.classes else (cls,)
        found: dict[str, str] = {}
        for owner in lineage:
            for rule in self.restricted.get((owner, prop), ()):
                if rule.kind != "has_value" and (rule.filler or "").startswith(XSD):
                    found.setdefault("all" if rule.kind == "all" else "some", rule.filler or "")
                elif rule.kind == "has_value":
                    found.setdefault("has_value", rule.filler or "")
        return found

    def property_arg(self, cls: str, prop: PropertyInfo, *, depth: int) -> ArgSpec | None:
        card = self.ir.cardinality(cls, prop.iri)
        many = not (prop.functional or card.max == 1)
        # comments once per tool: nested (inline) fields carry the property label only
        text = self.describe(prop.iri) if depth <= 1 else prop.label
        stated = self.stated(cls, prop.iri)
        # a value an owl:hasValue states is written when none is given: not required
        common = {"name": self.prop_word(prop), "property": prop.iri, "many": many,
                  "required": card.min >= 1 and not card.soft and "has_value" not in stated,
                  "description": text}
        if prop.kind == "datatype":
            enum = self.ir.enumeration(cls, prop.iri)
            datatype = (stated.get("all") or (prop.range[0] if prop.range else None)
                        or stated.get("some"))
            return ArgSpec(kind="literal", datatype=datatype, enum=enum.values if enum else (),
                           facets=prop.facets, **common)
        quantity = self.ir.quantity_of(prop.iri)
        if quantity is not None:
            return ArgSpec(kind="quantity", quantity=quantity.iri, units=quantity.units,
                           **common)
        targets = self.range_concretes(prop)
        enum = self.ir.enumeration(cls, prop.iri)
        if enum is not None and (targets or not prop.range):  # fixed individuals
            return ArgSpec(kind="node", classes=targets, enum=enum.values, **common)
        if not prop.range:  # the T-Box says nothing: any entity of the paper, or an individual
            return ArgSpec(kind="node", node_mode="occurrence", **common)
        if not targets:
            return None
        label_mode = all(self.is_label_class(t) for t in targets)
        names = self.ir.enumeration(targets[0], RDFS_LABEL) if label_mode else None
        fields: tuple[ArgSpec, ...] = ()
        if depth < MAX_INLINE_DEPTH and len(targets) == 1:
            fields = self.field_args(targets[0], depth=depth + 1)
            if label_mode and len(fields) == 1:  # a name and nothing else: a plain string
                fields = ()
        key = self.ir.classes[targets[0]].key if label_mode and len(targets) == 1 else None
        if key is not None:
            common["description"] += (f" (a text is its {self.ir.properties[key].label}; "
                                      "found or created by it)")
        return ArgSpec(kind="node", node_mode="label" if label_mode else "occurrence",
                       classes=targets, fields=fields, enum=names.values if names else (),
                       **common)

    def type_arg(self, classes: tuple[str, ...]) -> tuple[ArgSpec, ...]:
        if len(classes) < 2:
            return ()
        return (ArgSpec(name="type", kind="type", classes=classes, required=True,
                        enum=self.type_words(classes),
                        description="which kind of entity to create"),)

    def type_words(self, classes: tuple[str, ...]) -> tuple[str, ...]:
        """`type` values: the local name when it is a word unique among `classes` (as tools of
        T-Boxes with CamelCase names have them), else the label-based word, prefixed where two
        share it."""
        names = [local_name(c) for c in classes]
        unique = unique_words(self.ir, [c for c in classes if c in self.ir.classes])
        return tuple(name if not is_opaque(name) and names.count(name) == 1
                     else unique.get(cls, snake(name)) for cls, name in zip(classes, names,
                                                                            strict=True))

    # -- tools ----------------------------------------------------------------------------------
    def create_tools(self) -> list[ToolSpec]:
        tools = []
        for cls in sorted({*self.groups, *self.ordered}):
            info = self.ir.classes[cls]
            kinds = self.groups.get(cls, (cls,))
            head: list[ArgSpec] = []
            order_prop = None
            if cls in self.ordered:
                rule = self.ordered[cls]
                order_prop = rule.order_property
                head = [
                    ArgSpec(name=snake(local_name(rule.container_class)), kind="container",
                            property=rule.member_property, classes=(rule.container_class,),
                            required=True, description=f"the {self._label(rule.container_class)}"
                            f" this step belongs to ({REF})"),
                    ArgSpec(name=arg_name(local_name(order_prop)), kind="literal",
                            property=order_prop, datatype=_range1(self.ir, order_prop),
                            required=True, description=self.describe(order_prop)
                            or f"position from {rule.start}"),
                ]
            skip = frozenset({order_prop} if order_prop else ())
            args = (*head, *self.type_arg(kinds), *self.group_args(kinds, skip), DRY_RUN,
                    EVIDENCE)
            tools.append(ToolSpec(
                name=f"create_{self.group_words.get(cls) or self.class_word(cls)}",
                action="create", target=cls,
                via=head[0].property if head else None, order_property=order_prop,
                toolset=self.toolset_of(cls), args=args,
                description=f"Create one {info.label}."))
        return tools

    def add_tools(self) -> list[ToolSpec]:
        tools = []
        for prop in self.object_props():
            if prop.iri in self.member_props or self.is_enumerated(prop.iri):
                continue
            targets = tuple(t for t in self.range_concretes(prop) if not self.is_label_class(t))
            if not targets:
                continue
            subject = ArgSpec(name="subject", kind="subject", classes=prop.domain, required=True,
                              description=f"the entity to attach it to ({REF}), one of: "
                              + ", ".join(self._label(d) for d in prop.domain))
            fields = self.field_args(targets[0], depth=1) if len(targets) == 1 else (
                ArgSpec(name="label", kind="label", property=RDFS_LABEL,
                        description="name of this entity as written in the paper"),)
            tools.append(ToolSpec(
                name=f"add_{self.prop_word(prop)}", action="add", target=targets[0], via=prop.iri,
                toolset=self.toolset_of(targets[0], prop.domain),
                args=(subject, *self.type_arg(targets), *fields, DRY_RUN, EVIDENCE),
                description=(f"Create a new {' or '.join(self._label(t) for t in targets)} "
                             f"and attach it with '{prop.label}' to an existing "
                             f"{' or '.join(self._label(d) for d in prop.domain)}.")))
        return tools

    def _label(self, cls: str) -> str:
        info = self.ir.classes.get(cls)
        return info.label if info else local_name(cls)


_VIEWS: dict[int, tuple[OntologyIR, _View]] = {}  # the last IR's view (building one costs)


def view_of(ir: OntologyIR) -> _View:
    """The compiler's (memoising) view of an IR; the last one is kept."""
    held = _VIEWS.get(id(ir))
    if held is None or held[0] is not ir:
        _VIEWS.clear()
        _VIEWS[id(ir)] = held = (ir, _View(ir))
    return held[1]


def _range1(ir: OntologyIR, prop: str) -> str | None:
    info = ir.properties.get(prop)
    return info.range[0] if info and info.range else None


def _dedupe_names(tools: list[ToolSpec]) -> list[ToolSpec]:
    seen: dict[str, int] = {}
    for t in tools:
        seen[t.name] = seen.get(t.name, 0) + 1
    out = []
    for t in tools:
        if seen[t.name] > 1 and t.via:
            t = t.model_copy(update={"name": f"{t.name}_{snake(local_name(t.via))}"})
        out.append(t)
    return out


def _with_schema(tool: ToolSpec) -> ToolSpec:
    return tool.model_copy(update={"input_schema": input_schema(tool.args)})
