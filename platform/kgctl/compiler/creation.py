"""Which classes get a create tool and which properties `link` takes, when no profile says
(the rules of docs/ontology.md, "Any ontology"). A mixin of the compiler's view of an IR."""

from __future__ import annotations

from kgctl.compiler.naming import readable, snake
from kgctl.compiler.spec import ArgSpec
from kgctl.ontology.ir import OntologyIR, Restriction

# without a profile's top level, every class that can have instances of its own gets a create
# tool; above this many, one tool per main class (a `type` argument picks the sub-class)
MAX_CREATE_TOOLS = 40


class CreationRules:
    """Needs `ir`, `ordered`, `restricted`, `group_words`, `measure_props`, `instantiable`,
    `range_of`, `owning_props`, `object_props` and `field_args` of the view it is mixed
    into."""

    ir: OntologyIR
    ordered: dict
    restricted: dict[tuple[str, str], list[Restriction]]
    group_words: dict[str, str]
    groups: dict[str, tuple[str, ...]]
    measure_props: set[str]

    def roots(self) -> list[str]:
        """Classes with a create tool. When a profile states a top level or standalone classes
        (it models ownership): those and the classes nothing owns (the rest is created inline
        or by `add_` tools). Otherwise every instantiable class that is not a fixed set of
        individuals."""
        if self.ir.top_level or any(c.standalone for c in self.ir.classes.values()):
            return sorted(
                c for c in self.ir.classes
                if self.instantiable(c) and c not in self.ordered
                and (c in self.ir.top_level or self.ir.classes[c].standalone
                     or not self.owning_props(c))
            )
        fixed = {r for e in self.ir.enumerations if e.on_class is None
                 for r in self.range_of(e.on_property)}  # classes defined by owl:oneOf
        return sorted(c for c in self.ir.classes
                      if self.instantiable(c) and c not in self.ordered and c not in fixed
                      and not self.ir.classes[c].one_of and not self.holds_deprecated_only(c))

    def holds_deprecated_only(self, cls: str) -> bool:
        """A top-level class several deprecated classes and nothing else fall under, and that
        states nothing of its own (OBO's ObsoleteClass): a bin, not a kind of thing."""
        below = [self.ir.classes[c] for c in self.ir.subclasses(cls) if c != cls]
        return (len(below) > 1 and not self.ir.classes[cls].parents
                and all(c.deprecated for c in below)
                and not self.ir.own_properties(cls))

    def argument_estimate(self, *, limit: int) -> int:
        """Top-level arguments the per-class tools would have (the properties of the classes
        each create tool makes, of the class each `add_` tool attaches), counted from the
        memoised property sets, up to just past `limit`: a surface too large for the budget
        is never built."""
        def count(classes: tuple[str, ...]) -> int:
            return len({p.iri for c in classes for p in self.ir.properties_of(c)
                        if p.kind != "annotation"})

        total = 0
        for classes in (*self.groups.values(),
                        *(self.range_concretes(p)[:1] for p in self.object_props())):
            total += count(classes)
            if total > limit:
                break
        return total

    def create_groups(self) -> dict[str, tuple[str, ...]]:
        """Create tool target -> the classes it creates (itself first). Up to
        MAX_CREATE_TOOLS roots: one each. Above: one per main class (a root some property's
        domain or range names, or one with no root above it); every other root is created by
        the tool of its nearest main ancestor, whose `type` argument picks it."""
        roots = self.roots()
        if len(roots) <= MAX_CREATE_TOOLS:
            return {c: (c,) for c in roots}
        chosen = set(roots)
        named = {c for p in self.ir.properties.values() for c in (*p.domain, *p.range)}
        main = {c for c in roots
                if c in named or not chosen.intersection(self.ir.classes[c].ancestors)}
        groups: dict[str, list[str]] = {m: [m] for m in sorted(main)}
        for cls in roots:
            if cls not in main:
                owner = next(a for a in self.ir.classes[cls].ancestors if a in main)
                groups[owner].append(cls)
        if len(groups) > MAX_CREATE_TOOLS:
            groups = self.by_module(groups, named)
        return {m: tuple(members) for m, members in groups.items()}

    def by_module(self, groups: dict[str, list[str]], named: set[str]
                  ) -> dict[str, list[str]]:
        """Still too many main classes (their super-classes live in T-Boxes not loaded): the
        ones a property names keep their tool, the others are created by one tool per T-Box
        file (`create_<file>_entity`, its `type` picking the class)."""
        kept = {m: members for m, members in groups.items() if m in named}
        files: dict[str, list[str]] = {}
        for main, members in groups.items():
            if main not in kept:
                files.setdefault(self.ir.classes[main].ontology, []).extend(members)
        for file, members in sorted(files.items()):
            members.sort(key=lambda c: (snake(readable(self.ir.classes[c].name,
                                                       self.ir.classes[c].label)), c))
            kept[members[0]] = members
            self.group_words[members[0]] = snake(file.rsplit(".", 1)[0]) + "_entity"
        return kept

    def link_props(self) -> list[str]:
        """Object properties `link` accepts: both directions of an inverse pair, and those the
        T-Box gives no domain (usable on any entity)."""
        return sorted(p.iri for p in self.ir.properties.values()
                      if p.kind == "object" and not p.deprecated
                      and p.iri not in self.measure_props and self.ir.quantity_of(p.iri) is None)

    def group_args(self, kinds: tuple[str, ...], skip: frozenset[str]) -> tuple[ArgSpec, ...]:
        """Fields of the main class, then those only its sub-classes take (restricted there);
        the engine checks each against the class the `type` argument picks."""
        args = {a.name: a for a in self.field_args(kinds[0], depth=1, skip=skip)}
        for cls in kinds[1:]:
            for arg in self.field_args(cls, depth=2, skip=skip):
                args.setdefault(arg.name, arg.model_copy(update={"required": False}))
        return tuple(args.values())
