"""The instantiation engine: one tool call = validate everything, then one atomic write.

Pipeline of a write call: guard the input size -> plan the triples in a `Draft` (findings
collected, nothing written) -> reject with all findings, or report a dry run, or write the
triples and the call record in one `store.write` and keep the paper index current.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from functools import cached_property, partial
from typing import Any

from pydantic import ValidationError
from pyoxigraph import NamedNode, Triple

from kgctl.compiler import ToolSpec, ToolSurface, compile_tools
from kgctl.compiler.bounded import is_entity_tool
from kgctl.compiler.lookups import link_properties, property_arg, writable_properties
from kgctl.compiler.names import property_ref
from kgctl.compiler.naming import local_name
from kgctl.errors import StoreError
from kgctl.instantiation.axioms import check_entity, rules_by_class
from kgctl.instantiation.checks import (
    check_key_free,
    check_order,
    check_room,
    order_number,
    range_of,
)
from kgctl.instantiation.choice import chosen_type, fields_for, given, without_type
from kgctl.instantiation.entities import plan_create_entity
from kgctl.instantiation.findings import Finding, Rejected, ToolResult
from kgctl.instantiation.index import PaperIndex
from kgctl.instantiation.planner import Draft
from kgctl.instantiation.reads import run_read
from kgctl.instantiation.values import MAX_CALL_BYTES, literal
from kgctl.instantiation.walks import MEMBERS, container_of, incoming, linking, outgoing, owned
from kgctl.ontology.ir import OntologyIR
from kgctl.store.base import CallRecord, Evidence, GraphStore
from kgctl.store.provenance import utc_now

MAX_INDEXES = 64  # papers whose index stays in memory (least recently used dropped first)


class Instantiator:
    """Runs compiled tools against one store. `feedback=False` turns every check that only
    produces feedback off (guards stay: size, IRI syntax, control characters, unresolvable
    references), so whatever a call gives is written."""

    def __init__(self, ir: OntologyIR, store: GraphStore, *, surface: ToolSurface | None = None,
                 feedback: bool = True) -> None:
        self.ir, self.store, self.feedback = ir, store, feedback
        self.surface = surface or compile_tools(ir)
        self._links, self._writable = link_properties(ir), writable_properties(ir)
        self._indexes: OrderedDict[str, PaperIndex] = OrderedDict()  # most recent last
        self._seq: dict[str, int] = {}
        self._rules = rules_by_class(ir)
        self._keys = {c.key for c in ir.classes.values() if c.key is not None}

    def over(self, store: GraphStore) -> Instantiator:
        """The same tools over another store: what was derived from the IR is shared, the
        papers' caches are not."""
        other = copy.copy(self)
        other.store, other._indexes, other._seq = store, OrderedDict(), {}
        return other

    def index(self, paper_id: str) -> PaperIndex:
        """The paper's index; only the MAX_INDEXES most recently used papers keep theirs in
        memory (a long-running server or a corpus replay would otherwise hold every paper's)."""
        if paper_id not in self._indexes:
            self._indexes[paper_id] = PaperIndex.load(self.store, paper_id,
                                                      key_properties=self._keys)
            if len(self._indexes) > MAX_INDEXES:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(paper_id)
        return self._indexes[paper_id]

    @cached_property
    def _property_names(self) -> dict[str, list[tuple[str, str]]]:
        """Every way a call may name a property (IRI, prefixed name, tool name, local name)
        -> (property, its tool name), in the IR's order."""
        names: dict[str, list[tuple[str, str]]] = {}
        for p in self.ir.properties:
            ref = property_ref(self.ir, p)
            for name in dict.fromkeys((p, self.ir.curie(p), ref, local_name(p))):
                names.setdefault(name, []).append((p, ref))
        return names

    def _next_seq(self, paper_id: str) -> int:
        if paper_id not in self._seq:
            known = self.store.has_paper(paper_id)
            self._seq[paper_id] = len(self.store.trace(paper_id)) if known else 0
        return self._seq[paper_id] + 1

    # -- entry point ----------------------------------------------------------------------------
    def call(self, tool: str, paper_id: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; raises `Rejected` (nothing written) when the call is refused."""
        spec = self.surface.get(tool)
        if spec is None:
            raise Rejected([Finding(code="unknown_tool", field="tool", value=tool,
                                    message="no such tool", retryable=False,
                                    allowed=tuple(t.name for t in self.surface.tools))])
        size = len(json.dumps(arguments, ensure_ascii=False, default=str))
        if size > MAX_CALL_BYTES:
            raise Rejected([Finding(code="too_large", field="arguments", value=size,
                                    message=f"call larger than {MAX_CALL_BYTES} bytes",
                                    hint="split it into several calls")])
        names = tuple(a.name for a in spec.args)
        extra = sorted(set(arguments) - set(names))
        # create/add tools report theirs when filling (create_entity's are in `values`)
        if extra and (spec.action not in ("create", "add") or is_entity_tool(spec)):
            raise Rejected([Finding(code="unknown_argument", field=k, value=arguments[k],
                                    message=f"no argument '{k}'", allowed=names)
                            for k in extra])
        with self.store.writing():  # one call at a time: the caches below stay consistent
            if spec.action == "read":
                return run_read(self, spec, paper_id, arguments)
            try:
                return self._write(spec, paper_id, arguments)
            except StoreError:
                if not self._stale(paper_id):
                    raise
            return self._write(spec, paper_id, arguments)

    def _stale(self, paper_id: str) -> bool:
        """Whether another writer (e.g. a second Instantiator on this store) has added calls to
        the paper since this one cached its index; if so the caches are dropped."""
        cached = self._seq.pop(paper_id, None)
        if cached is None or cached == self._next_seq(paper_id) - 1:
            return False
        self._indexes.pop(paper_id, None)
        return True

    def _write(self, spec: ToolSpec, paper_id: str, arguments: dict[str, Any]) -> ToolResult:
        index = self.index(paper_id)
        draft = Draft(self.ir, self.store, index, paper_id, seq=self._next_seq(paper_id),
                      feedback=self.feedback)
        evidence = _evidence(draft, arguments.get("evidence"))
        if not isinstance(arguments.get("dry_run", False), bool):
            draft.fail("datatype", "dry_run", arguments["dry_run"], "not a boolean")
        getattr(self, f"_plan_{spec.action}")(spec, draft, arguments)
        if self.feedback and spec.name != "delete_entity":
            self._check_axioms(draft)
        if draft.findings:
            raise Rejected(draft.findings)
        insert = list(dict.fromkeys(draft.insert))
        delete = list(dict.fromkeys(draft.delete))
        touched = tuple(dict.fromkeys([*draft.created, *draft.changed]))
        summary = _summary(self.ir, spec, draft)
        missing = tuple(draft.missing)
        if arguments.get("dry_run"):
            return ToolResult(status="dry_run", paper=paper_id, tool=spec.name, iris=touched,
                              summary="would have " + summary, added=len(insert),
                              removed=len(delete), missing=missing)
        stored_args = {k: v for k, v in arguments.items() if k not in ("dry_run", "evidence")}
        # the expected seq: the store refuses the write if another writer came first
        record = CallRecord(paper_id=paper_id, seq=draft.seq, tool=spec.name,
                            arguments=stored_args, iris=touched, time=utc_now(),
                            evidence=evidence)
        self.store.write(paper_id, insert=insert, delete=delete, record=record)
        index.apply(insert=insert, delete=delete)
        self._seq[paper_id] = draft.seq
        return ToolResult(paper=paper_id, tool=spec.name, iris=touched, summary=summary,
                          added=len(insert), removed=len(delete), missing=missing)

    # -- write plans ------------------------------------------------------------------------------
    def _plan_create(self, spec: ToolSpec, draft: Draft, args: dict[str, Any]) -> None:
        if is_entity_tool(spec):
            plan_create_entity(draft, args)
            return
        cls = chosen_type(self.ir, draft, spec, args)
        container = None
        if spec.via:
            head = spec.args[0]
            container = _required_ref(draft, head.name, args, head.classes)
        node = draft.mint(cls)
        if container is not None:
            draft.add(container, spec.via or "", NamedNode(node))
            draft.changed.append(container)
            order_arg = spec.args[1]
            check_order(draft, container, spec.via or "", spec.order_property or "",
                        args.get(order_arg.name), order_arg.name)
        draft.fill(node, cls, fields_for(self.ir, spec, cls), given(args))

    def _plan_add(self, spec: ToolSpec, draft: Draft, args: dict[str, Any]) -> None:
        subject_arg = spec.args[0]
        subject = _required_ref(draft, "subject", args, subject_arg.classes)
        cls = chosen_type(self.ir, draft, spec, args)
        if subject is not None:
            check_room(draft, subject, spec.via or "", "subject")
        node = draft.mint(cls)
        if subject is not None:
            draft.add(subject, spec.via or "", NamedNode(node))
            draft.changed.append(subject)
        draft.fill(node, cls, without_type(spec), given(args))

    def _plan_link(self, spec: ToolSpec, draft: Draft, args: dict[str, Any]) -> None:
        prop = _property(self._property_names, draft, args.get("property"), self._links)
        if prop is None:
            return
        info = self.ir.properties[prop]
        subject = _required_ref(draft, "subject", args, info.domain)
        ranges = tuple(info.range)
        obj = _required_ref(draft, "object", args, ranges)
        if subject is None or obj is None:
            return
        if NamedNode(obj) in draft.existing_values(subject, prop):
            draft.fail("duplicate", "object", args.get("object"), "this link already exists")
            return
        check_room(draft, subject, prop, "property")
        draft.add(subject, prop, NamedNode(obj))
        draft.changed.append(subject)

    def _plan_repair(self, spec: ToolSpec, draft: Draft, args: dict[str, Any]) -> None:
        entity = _required_ref(draft, "entity", args, ())
        if entity is None:
            return
        if spec.name == "delete_entity":
            self.plan_delete(draft, entity)
            return
        prop = _property(self._property_names, draft, args.get("property"),
                         self._writable)
        if prop is None:
            return
        classes = [t for t in draft.types_of(entity) if t in self.ir.classes]
        cls = next((c for c in classes if self.ir.applies(c, prop)), None)
        if cls is None:
            allowed = sorted({self.ir.curie(p.iri) for c in classes
                              for p in self.ir.properties_of(c)})
            draft.fail("type_mismatch", "property", args.get("property"), "the entity's class "
                       "is not in this property's domain", allowed=tuple(allowed))
            return
        arg = property_arg(self.ir, cls, prop)
        if arg is None:
            return
        arg = arg.model_copy(update={"name": "value"})
        for old in draft.existing_values(entity, prop):
            draft.delete.append(Triple(NamedNode(entity), NamedNode(prop), old))
            if isinstance(old, NamedNode) and any(
                    t in self.ir.quantities for t in draft.index.types.get(old.value, ())):
                draft.delete.extend(outgoing(draft, old.value))
        draft.changed.append(entity)
        value = args.get("value")
        if value is None:
            if arg.required:
                draft.fail("required_missing", "value", None, f"{self.ir.curie(prop)} is "
                           "required on this entity; give a new value")
            return
        if self.ir.classes[cls].key == prop:
            check_key_free(draft, entity, cls, prop, value)
        rule = next((r for r in self.ir.orderings if r.order_property == prop), None)
        if rule is not None:
            container = container_of(draft, entity, rule)
            if container is not None:
                check_order(draft, container, rule.member_property, prop, value, "value",
                            moving=entity)
        for i, item in enumerate(draft.values(arg, value, "value")):
            draft.value(entity, cls, arg, item, f"value[{i}]" if arg.many else "value")

    # -- checks ------------------------------------------------------------------------------
    def _check_axioms(self, draft: Draft) -> None:
        """OWL restrictions of what the call creates or changes, and the restrictions on
        inverse properties of the entities it links to."""
        linked_by = partial(linking, draft)
        touched = list(dict.fromkeys([*draft.created, *draft.changed]))
        for node in touched:
            check_entity(draft, self._rules, node, new=node in draft.created, incoming=linked_by)
        targets = {t.object.value for t in draft.insert
                   if isinstance(t.object, NamedNode) and t.subject.value in touched
                   and t.object.value not in touched and draft.known(t.object.value)}
        for node in sorted(targets):
            check_entity(draft, self._rules, node, new=False, incoming=linked_by,
                         inverse_only=True)

    def plan_delete(self, draft: Draft, entity: str) -> None:
        """Delete `entity` with the nodes only it owns; later members of its ordered
        containers move up one."""
        nodes = owned(draft, entity)
        for node in nodes:
            draft.delete.extend(outgoing(draft, node))
            draft.delete.extend(incoming(draft, node))
        draft.changed.extend(nodes)
        for rule in self.ir.orderings:
            container = container_of(draft, entity, rule)
            if container is None:
                continue
            rows = self.store.query(MEMBERS, bindings={
                "c": NamedNode(container), "member": NamedNode(rule.member_property),
                "order": NamedNode(rule.order_property)}, paper_id=draft.pid)
            orders = {r["m"].value: r["o"] for r in rows if r["o"] is not None}
            gone = order_number(orders[entity].value) if entity in orders else None
            for member, old in sorted(orders.items()):
                if gone is not None and member != entity and order_number(old.value) > gone:
                    draft.delete.append(Triple(NamedNode(member),
                                               NamedNode(rule.order_property), old))
                    draft.add(member, rule.order_property, literal(
                        order_number(old.value) - 1, range_of(self.ir, rule.order_property)))
                    draft.changed.append(member)


def _required_ref(draft: Draft, name: str, args: dict[str, Any],
                  classes: tuple[str, ...]) -> str | None:
    if args.get(name) is None:
        draft.fail("required_missing", name, None, f"'{name}' is required",
                   allowed=draft.index.nearest("", draft.candidates(classes)) if classes else ())
        return None
    return draft.resolve(name, args[name], classes)


def _property(names: dict[str, list[tuple[str, str]]], draft: Draft, raw: Any,
              allowed: tuple[str, ...]) -> str | None:
    if raw is None:
        draft.fail("required_missing", "property", None, "'property' is required",
                   allowed=allowed)
        return None
    matches = [p for p, ref in names.get(str(raw), []) if ref in allowed]
    if not matches:
        draft.fail("enum_value", "property", raw, "unknown property", allowed=allowed)
        return None
    return matches[0]


def _evidence(draft: Draft, raw: Any) -> Evidence | None:
    if raw is None:
        return None
    try:
        return Evidence.model_validate(raw, strict=True)  # the JSON types its schema shows
    except ValidationError as exc:
        draft.fail("datatype", "evidence", raw, f"evidence must be {{quote, section, start, "
                   f"end}}: {exc.errors()[0]['msg']}")
        return None


def _summary(ir: OntologyIR, spec: ToolSpec, draft: Draft) -> str:
    main = draft.created[0] if draft.created else (draft.changed[0] if draft.changed else "")
    verb = {"create": "created", "add": "created", "link": "linked",
            "repair": "deleted" if spec.name == "delete_entity" else "updated"}[spec.action]
    what = ir.curie(spec.target) if spec.target else ""
    return (f"{verb} {what} {main}".replace("  ", " ").strip()
            + f" (+{len(set(draft.insert))} / -{len(set(draft.delete))} triples)")

