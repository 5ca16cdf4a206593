"""Turn one call's arguments into triples, collecting findings instead of raising.

A `Draft` walks the argument specs of a compiled tool (its write plan): literals are coerced
to their xsd range, quantities become quantity nodes, named auxiliaries are found or created
by (class, normalised label), references are resolved to entities of this paper. Nothing is
written here; the engine writes the draft in one transaction when it has no findings.
"""

from __future__ import annotations

import re
from typing import Any

from pyoxigraph import Literal, NamedNode, Triple

from kgctl.compiler.naming import local_name
from kgctl.compiler.spec import ArgSpec
from kgctl.compiler.tools import view_of
from kgctl.instantiation.findings import Finding
from kgctl.instantiation.index import RDF_TYPE, PaperIndex
from kgctl.instantiation.named import NamedNodes
from kgctl.instantiation.quantity_nodes import QuantityNodes
from kgctl.instantiation.values import (
    MAX_ITEMS,
    MAX_TEXT,
    coerce_literal,
    iri_problem,
    literal,
    looks_like_iri,
    strip_iri,
    text_problem,
)
from kgctl.instantiation.xsd import facet_problem
from kgctl.ontology.ir import OntologyIR
from kgctl.store.base import GraphStore
from kgctl.store.iris import PAPER_BASE, mint_iri, normalise_label

# findings that stay on with feedback off: without them nothing sensible can be written
GUARDS = frozenset({"unknown_argument", "too_large", "invalid_text", "invalid_iri", "not_found",
                    "unknown_tool"})
_QUOTED_IRI = re.compile(r"^[^<>]* <([A-Za-z][A-Za-z0-9+.-]*:[^<>\s]+)>$")
MAX_CLASSES_SHOWN = 6  # admitted classes a type_mismatch message names


def paper_of_instance(iri: str) -> str | None:
    """The paper an instance IRI was minted in, if it is a kgctl instance IRI."""
    if not iri.startswith(PAPER_BASE):
        return None
    return iri[len(PAPER_BASE):].split("/", 1)[0] or None


class Draft(NamedNodes, QuantityNodes):
    def __init__(self, ir: OntologyIR, store: GraphStore, index: PaperIndex, paper_id: str,
                 *, seq: int, feedback: bool) -> None:
        self.ir, self.store, self.index, self.pid = ir, store, index, paper_id
        self.seq, self.feedback = seq, feedback
        self.findings: list[Finding] = []
        self.missing: list[Finding] = []  # soft requirements not met: reported, not refused
        self.paths: dict[tuple[str, str], str] = {}  # (node, property) -> argument path
        self.prefixes: dict[str, str] = {}  # node -> path prefix of its arguments
        self.insert: list[Triple] = []
        self.delete: list[Triple] = []
        self.created: list[str] = []
        self.changed: list[str] = []  # existing entities this call changes
        self._minted = 0
        self._named: dict[tuple[str, str], str] = {}  # (class, normalised label) -> IRI
        self._keyed: dict[tuple[str, str], str] = {}  # (class, normalised key value) -> IRI

    # -- bookkeeping ------------------------------------------------------------------------
    def fail(self, code: str, field: str, value: Any, message: str, *,
             allowed: tuple[Any, ...] = (), hint: str = "") -> None:
        finding = Finding(code=code, field=field, value=value, message=message,
                          allowed=allowed, hint=hint)
        if (self.feedback or code in GUARDS) and finding not in self.findings:
            self.findings.append(finding)

    def field_of(self, node: str, prop: str) -> str:
        """The argument path that wrote (or would write) `prop` on `node` in this call."""
        if (node, prop) in self.paths:
            return self.paths[(node, prop)]
        info = self.ir.properties.get(prop)
        word = view_of(self.ir).prop_word(info) if info else local_name(prop)
        return self.prefixes.get(node, "") + word

    def require(self, code: str, field: str, value: Any, message: str, *,
                allowed: tuple[Any, ...] = (), hint: str = "") -> None:
        """An OWL minimum not met: refused when the IR makes existentials hard, else recorded
        as missing (once)."""
        if self.ir.existentials == "hard":
            self.fail(code, field, value, message, allowed=allowed, hint=hint)
            return
        finding = Finding(code=code, field=field, value=value, message=message,
                          allowed=allowed, hint=hint)
        if finding not in self.missing:
            self.missing.append(finding)

    def add(self, s: str, p: str, o: NamedNode | Literal) -> None:
        self.insert.append(Triple(NamedNode(s), NamedNode(p), o))

    def mint(self, cls: str, key: str | None = None, *, exact: bool = False) -> str:
        if key is None:
            self._minted += 1
            key = f"{self.seq}-{self._minted}"
        iri = mint_iri(self.pid, cls, key, exact=exact).value
        self.created.append(iri)
        self.add(iri, RDF_TYPE, NamedNode(cls))
        return iri

    def known(self, iri: str) -> bool:
        return iri in self.index.types or iri in self.created or iri in self.ir.individuals

    def types_of(self, iri: str) -> set[str]:
        own = {t.object.value for t in self.insert
               if t.subject.value == iri and t.predicate.value == RDF_TYPE}
        named = self.ir.individuals.get(iri)
        return self.index.types.get(iri, set()) | own | set(named.types if named else ())

    def individual(self, text: str, classes: tuple[str, ...]) -> str | None:
        """A named individual of the T-Boxes (a unit, a country ...) of an admitted class,
        by prefixed name, local name or label."""
        folded = normalise_label(text)
        hits = [i.iri for i in self.ir.individuals.values()
                if text == self.ir.curie(i.iri) or folded in (
                    normalise_label(i.name), normalise_label(i.label))]
        fitting = [h for h in hits if self.admitted(h, classes)]
        return fitting[0] if len(fitting) == 1 else None

    def admitted(self, iri: str, classes: tuple[str, ...]) -> bool:
        return not classes or any(self.ir.is_a(t, c) for t in self.types_of(iri)
                                  for c in classes)

    def existing_values(self, subject: str, prop: str) -> list[Any]:
        """Values of `prop` on `subject`: stored ones, then those this draft already adds."""
        pending = [t.object for t in self.insert
                   if t.subject.value == subject and t.predicate.value == prop]
        if subject not in self.index.types:
            return pending
        stored = [t.object for t in self.store.triples(self.pid, subject=NamedNode(subject),
                                                       predicate=NamedNode(prop))]
        return [*stored, *(o for o in pending if o not in stored)]

    def facts(self, node: str) -> set[tuple[Any, Any]]:
        """(predicate, object) pairs of `node`, stored and pending (minus pending deletes)."""
        pending = {(t.predicate, t.object) for t in self.insert if t.subject.value == node}
        if node not in self.index.types:
            return pending
        stored = {(t.predicate, t.object)
                  for t in self.store.triples(self.pid, subject=NamedNode(node))}
        gone = {(t.predicate, t.object) for t in self.delete if t.subject.value == node}
        return pending | (stored - gone)

    def holds(self, subject: str, cls: str, arg: ArgSpec, item: Any, held: list[Any]) -> bool:
        """Whether `item` is the value `subject` already holds for `arg`: the same literal, the
        same named node, or a new node (e.g. a quantity) with exactly the facts of a held one.
        Planned in a scratch draft, so nothing of it reaches this one."""
        scratch = Draft(self.ir, self.store, self.index, self.pid, seq=self.seq, feedback=True)
        scratch._named, scratch._minted = dict(self._named), self._minted
        scratch._keyed = dict(self._keyed)
        scratch.insert = list(self.insert)
        start = len(scratch.insert)
        scratch.value(subject, cls, arg, item, "")
        written = [t.object for t in scratch.insert[start:]
                   if t.subject.value == subject and t.predicate.value == arg.property]
        if scratch.findings or len(written) != 1:
            return False
        value = written[0]
        if value in held:
            return True
        if not (isinstance(value, NamedNode) and value.value in scratch.created):
            return False
        new = scratch.facts(value.value)
        return any(isinstance(o, NamedNode) and self.facts(o.value) == new for o in held)

    # -- text and references ----------------------------------------------------------------
    def text(self, field: str, value: Any) -> str | None:
        if not isinstance(value, str):
            self.fail("datatype", field, value, "expected a text value")
            return None if self.feedback else str(value)
        if len(value) > MAX_TEXT:
            self.fail("too_large", field, value[:80] + "...", f"text longer than {MAX_TEXT} "
                      "characters", hint="shorten it; long passages belong in evidence")
            return None
        if problem := text_problem(value):
            self.fail("invalid_text", field, value, problem, hint="remove control characters")
            return None
        return value

    def candidates(self, classes: tuple[str, ...]) -> list[str]:
        return [iri for iri in self.index.entities() if self.admitted(iri, classes)]

    def resolve(self, field: str, ref: Any, classes: tuple[str, ...]) -> str | None:
        """IRI of the existing entity `ref` (an IRI or a label) of an admitted class."""
        text = self.text(field, ref)
        if text is None:
            return None
        allowed_names = tuple(self.ir.curie(c) for c in classes)
        if (quoted := _QUOTED_IRI.match(text)) is not None:  # "label <IRI>", as `allowed` has it
            text = quoted[1]
        if looks_like_iri(text):
            if problem := iri_problem(text):
                self.fail("invalid_iri", field, text, problem, hint="give a plain IRI or a label")
                return None
            iri = strip_iri(text)
            other = paper_of_instance(iri)
            if other is not None and other != self.pid:
                nearest = self.index.nearest(local_name(iri), self.candidates(classes))
                self.fail("foreign_iri", field, iri, f"IRI belongs to paper {other!r}, not "
                          f"{self.pid!r}", allowed=nearest,
                          hint="create the entity in this paper or use one of its own IRIs")
                return iri
            if not self.known(iri):
                self.fail("not_found", field, iri, "no entity with this IRI in this paper",
                          allowed=self.index.nearest(local_name(iri), self.candidates(classes)),
                          hint="use list_instances to see what exists")
                return None
        else:
            hits = sorted(self.index.find_label(text) | {
                iri for (cls, key), iri in self._named.items() if key == normalise_label(text)})
            fitting = [h for h in hits if self.admitted(h, classes)]
            if not hits and (named := self.individual(text, classes)) is not None:
                return named
            if len(fitting) > 1:
                self.fail("ambiguous", field, text, f"{len(fitting)} entities have this label",
                          allowed=tuple(fitting), hint="pass one of these IRIs instead")
                return fitting[0]
            if not fitting and not hits:
                self.fail("not_found", field, text, "no entity with this label in this paper",
                          allowed=self.index.nearest(text, self.candidates(classes)),
                          hint="use an existing label or IRI, or create the entity first")
                return None
            iri = fitting[0] if fitting else hits[0]
        if not self.admitted(iri, classes):
            got = ", ".join(sorted(self.ir.curie(t) for t in self.types_of(iri))) or "untyped"
            shown = " or ".join(allowed_names[:MAX_CLASSES_SHOWN]) + (
                f" (or {len(allowed_names) - MAX_CLASSES_SHOWN} more)"
                if len(allowed_names) > MAX_CLASSES_SHOWN else "")
            self.fail("type_mismatch", field, text, f"entity is a {got}; expected {shown}",
                      allowed=self.index.nearest(text, self.candidates(classes)),
                      hint="link an entity of an admitted class (create it first if none "
                           "exists)")
        return iri

    # -- argument values ----------------------------------------------------------------------
    def values(self, arg: ArgSpec, raw: Any, field: str) -> list[Any]:
        """The list of values of one argument, with list-size and max-one checks."""
        if raw is None:
            return []
        if arg.many and not isinstance(raw, list):
            self.fail("datatype", field, raw, f"'{arg.name}' takes a list", hint="give [value]")
            return [] if self.feedback else [raw]
        items = raw if isinstance(raw, list) else [raw]
        if len(items) > MAX_ITEMS:
            self.fail("too_large", field, len(items), f"more than {MAX_ITEMS} values")
            return []
        if not arg.many and len(items) > 1:
            self.fail("max_one", field, raw, f"'{arg.name}' takes at most one value",
                      hint="pick the one value the paper states for this entity")
            return items if not self.feedback else items[:1]
        if not arg.many and isinstance(raw, list):
            self.fail("datatype", field, raw, f"'{arg.name}' takes one value, not a list")
            return [] if self.feedback else items
        return items

    def fill(self, subject: str, cls: str, args: tuple[ArgSpec, ...], given: dict[str, Any],
             prefix: str = "", *, existing: bool = False) -> None:
        """Write `given` onto `subject` following `args`; `existing` checks max-one in store."""
        self.prefixes.setdefault(subject, prefix)
        names = {a.name for a in args}
        for key in sorted(set(given) - names - {"dry_run", "evidence"}):
            self.fail("unknown_argument", prefix + key, given[key], f"no argument '{key}'",
                      allowed=tuple(sorted(names)))
        for arg in args:
            if arg.kind not in ("label", "literal", "quantity", "node"):
                continue
            field = prefix + arg.name
            items = self.values(arg, given.get(arg.name), field)
            if not items:
                if arg.required and not existing:
                    self.fail("required_missing", field, None, f"'{arg.name}' is required",
                              hint=arg.description[:200])
                continue
            held = self.existing_values(subject, arg.property or "") if existing else []
            if held and not arg.many:
                if len(items) == 1 and self.holds(subject, cls, arg, items[0], held):
                    continue  # the value it already has: nothing to write
                self.fail("max_one", field, given[arg.name], f"{local_name(subject)} already "
                          f"has a different value for '{arg.name}'",
                          allowed=tuple(str(o.value) for o in held),
                          hint="use update_property to change it")
                continue
            for i, item in enumerate(items):
                self.value(subject, cls, arg, item, f"{field}[{i}]" if arg.many else field)

    def value(self, subject: str, cls: str, arg: ArgSpec, item: Any, field: str) -> None:
        prop = arg.property or ""
        self.paths.setdefault((subject, prop), field.split("[", 1)[0])
        if arg.kind == "label":
            text = self.text(field, item)
            if text is not None:
                self.add(subject, prop, Literal(text))
        elif arg.kind == "literal":
            self.literal_value(subject, arg, item, field)
        elif arg.kind == "quantity":
            node = self.quantity(arg, item, field)
            if node is not None:
                self.add(subject, prop, NamedNode(node))
        else:
            node = self.node(arg, item, field)
            if node is not None:
                self.add(subject, prop, NamedNode(node))

    def literal_value(self, subject: str, arg: ArgSpec, item: Any, field: str) -> None:
        if isinstance(item, str) and self.text(field, item) is None:
            return
        value, problem = coerce_literal(item, arg.datatype)
        if not problem and arg.facets:
            problem = facet_problem(value, arg.facets)
        if problem:
            code = "range" if problem.startswith(("below", "above")) else "datatype"
            expects = self.ir.curie(arg.datatype) if arg.datatype else "a text value"
            self.fail(code, field, item, f"{problem} (expects {expects})")
            if self.feedback:
                return
            value = item if not isinstance(item, dict | list) else str(item)
        if arg.enum and str(value) not in arg.enum:
            self.fail("enum_value", field, item, "value outside the allowed set",
                      allowed=arg.enum)
        self.add(subject, arg.property or "", literal(value, arg.datatype if not problem
                                                      else None))

    def node(self, arg: ArgSpec, item: Any, field: str) -> str | None:
        if arg.enum and arg.node_mode is None:
            return self.enum_node(arg, item, field)
        if isinstance(item, dict):
            return self.new_node(arg, item, field)
        if arg.node_mode == "label" and isinstance(item, str) and not looks_like_iri(item):
            key = self.key_arg(arg.classes[0], arg)
            return self.named(arg.classes[0], arg,
                              {key.name if key else "label": item}, field)
        return self.resolve(field, item, arg.classes)

    def enum_node(self, arg: ArgSpec, item: Any, field: str) -> str | None:
        text = self.text(field, item)
        if text is None:
            return None
        # the names the schema shows; prefixed names and IRIs are taken too
        iri = next((v for v in arg.enum if text in (local_name(v), self.ir.curie(v), v)), None)
        if iri is None:
            self.fail("enum_value", field, text, "value outside the allowed set",
                      allowed=tuple(local_name(v) for v in arg.enum))
            return None
        return iri

    def new_node(self, arg: ArgSpec, item: dict[str, Any], field: str) -> str | None:
        if len(arg.classes) != 1:
            self.fail("datatype", field, item, "several classes fit here; create the entity "
                      "with its own tool and pass its IRI", allowed=arg.classes)
            return None
        cls = arg.classes[0]
        if arg.node_mode == "label":
            return self.named(cls, arg, item, field)
        node = self.mint(cls)
        self.fill(node, cls, arg.fields, item, field + ".")
        return node
