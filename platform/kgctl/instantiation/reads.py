"""Read tools: list and describe entities, describe a tool, show an ordered sequence, find
orphans.

They read the store and the paper index only, write nothing, and return rows in
`ToolResult.data`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from pyoxigraph import NamedNode

from kgctl.compiler import ToolSpec
from kgctl.compiler.bounded import is_entity_tool
from kgctl.compiler.lookups import class_words, entity_fields, find_class
from kgctl.compiler.naming import local_name
from kgctl.compiler.prompts import tool_guide
from kgctl.instantiation.axioms import check_entity, rules_by_class
from kgctl.instantiation.entities import entity_type
from kgctl.instantiation.findings import Rejected, ToolResult
from kgctl.instantiation.planner import Draft
from kgctl.instantiation.walks import linking

if TYPE_CHECKING:
    from kgctl.instantiation.engine import Instantiator

_OUT = "SELECT ?p ?o WHERE { ?s ?p ?o } ORDER BY ?p ?o"
_IN = "SELECT ?s ?p WHERE { ?s ?p ?o } ORDER BY ?p ?s"
_MEMBERS = "SELECT ?m ?o WHERE { ?c ?member ?m . OPTIONAL { ?m ?order ?o } }"
MAX_SUB_CLASSES = 40  # sub-classes describe_tool names for a create_entity type
_LINKED = "SELECT DISTINCT ?o WHERE { ?s ?p ?o . FILTER(isIRI(?o) && ?s != ?o) }"


def run_read(engine: Instantiator, spec: ToolSpec, paper_id: str,
             args: dict[str, Any]) -> ToolResult:
    draft = Draft(engine.ir, engine.store, engine.index(paper_id), paper_id, seq=0,
                  feedback=True)
    rows = READS[spec.name](engine, draft, args)
    if draft.findings:
        raise Rejected(draft.findings)
    return ToolResult(paper=paper_id, tool=spec.name, data=rows,
                      summary=f"{len(rows)} row(s)")


def _term(engine: Instantiator, term: Any) -> str:
    return engine.ir.curie(term.value) if isinstance(term, NamedNode) else term.value


def _row(engine: Instantiator, draft: Draft, iri: str) -> dict[str, Any]:
    types = sorted(engine.ir.curie(t) for t in draft.index.types.get(iri, ()))
    return {"iri": iri, "class": ", ".join(types), "label": draft.index.label_of(iri)}


def list_instances(engine: Instantiator, draft: Draft, args: dict[str, Any]) -> list[dict]:
    wanted = args.get("class_name")
    if wanted is not None and not isinstance(wanted, str):
        draft.fail("datatype", "class_name", wanted, "a class name is text")
        return []
    words = class_words(engine.ir)
    classes = [c for c in engine.ir.classes if wanted in (local_name(c), engine.ir.curie(c), c)]
    if wanted in words and words[wanted] not in classes:
        classes.append(words[wanted])
    if wanted is not None and not classes:
        draft.fail("enum_value", "class_name", wanted, "unknown class",
                   allowed=tuple(sorted(words) or sorted(local_name(c) for c in engine.ir.classes)))
        return []
    return [_row(engine, draft, iri) for iri in draft.index.entities()
            if not classes or draft.admitted(iri, tuple(classes))]


def describe_instance(engine: Instantiator, draft: Draft, args: dict[str, Any]) -> list[dict]:
    iri = draft.resolve("entity", args.get("entity"), ())
    if iri is None or draft.findings:
        return []
    node = NamedNode(iri)
    out = [{"direction": "out", "property": _term(engine, r["p"]), "value": _term(engine, r["o"])}
           for r in engine.store.query(_OUT, bindings={"s": node}, paper_id=draft.pid)]
    inc = [{"direction": "in", "property": _term(engine, r["p"]), "value": r["s"].value}
           for r in engine.store.query(_IN, bindings={"o": node}, paper_id=draft.pid)]
    return [_row(engine, draft, iri), *out, *inc]


def describe_tool(engine: Instantiator, draft: Draft, args: dict[str, Any]) -> list[dict]:
    name, argument = args.get("tool"), args.get("argument")
    spec = engine.surface.get(name) if isinstance(name, str) else None
    if spec is None:
        draft.fail("required_missing" if name is None else "enum_value", "tool", name,
                   "no such tool", allowed=tuple(t.name for t in engine.surface.tools))
        return []
    if argument is not None and not isinstance(argument, str):
        draft.fail("datatype", "argument", argument, "expected a text value")
        return []
    if is_entity_tool(spec):
        return _entity_guide(engine, draft, spec, args.get("type"), argument)
    rows = tool_guide(engine.ir, spec, argument)
    if rows is None:
        draft.fail("enum_value", "argument", argument, f"{spec.name} has no such argument",
                   allowed=tuple(r["argument"] for r in (tool_guide(engine.ir, spec) or [])[1:]))
        return []
    return rows


def _entity_guide(engine: Instantiator, draft: Draft, spec: ToolSpec, raw: Any,
                  argument: str | None) -> list[dict]:
    """describe_tool for create_entity: without `type` the main classes of the plan; with it
    that class's arguments (paths under `values`) and its direct sub-classes."""
    ir = engine.ir
    if raw is None:
        head = tool_guide(ir, spec)[0]
        return [{**head, "main_classes": [ir.curie(c) for _, group in engine.surface.groups
                                          for c in group]}]
    cls = entity_type(draft, raw)
    if cls is None:
        return []
    fields = entity_fields(ir, cls)
    as_tool = spec.model_copy(update={"target": cls, "args": fields})
    path = None if argument is None else argument.removeprefix("values.")
    rows = tool_guide(ir, as_tool, path)
    if rows is None:
        draft.fail("enum_value", "argument", argument, f"{ir.curie(cls)} has no such argument",
                   allowed=tuple(f"values.{a.name}" for a in fields if a.kind != "label"))
        return []
    for row in rows:
        if row.get("argument", "label") != "label":
            row["argument"] = "values." + row["argument"]
    if argument is None:
        below = sorted(ir.curie(c) for c in ir.classes
                       if cls in ir.classes[c].parents and find_class(ir, ir.curie(c)) == c)
        rows[0].update({"type": ir.curie(cls), "sub_classes": below[:MAX_SUB_CLASSES]})
    return rows


def find_missing(engine: Instantiator, draft: Draft, args: dict[str, Any]) -> list[dict]:
    """The soft requirements (OWL someValuesFrom / minimum cardinality) each entity of the
    paper still leaves unmet, checked as if it were created now (nothing is written)."""
    rules = rules_by_class(engine.ir)
    rows = []
    for iri in draft.index.entities():
        scratch = Draft(engine.ir, engine.store, draft.index, draft.pid, seq=0, feedback=True)
        check_entity(scratch, rules, iri, new=True, incoming=partial(linking, scratch))
        rows += [{**_row(engine, draft, iri), "field": f.field, "missing": f.message,
                  "allowed": list(f.allowed)} for f in scratch.missing]
    return rows


def show_sequence(engine: Instantiator, draft: Draft, args: dict[str, Any]) -> list[dict]:
    containers = tuple(r.container_class for r in engine.ir.orderings)
    iri = draft.resolve("container", args.get("container"), containers)
    if iri is None or draft.findings:
        return []
    rows = []
    for rule in engine.ir.orderings:
        if not draft.admitted(iri, (rule.container_class,)):
            continue
        found = engine.store.query(_MEMBERS, bindings={
            "c": NamedNode(iri), "member": NamedNode(rule.member_property),
            "order": NamedNode(rule.order_property)}, paper_id=draft.pid)
        members = sorted(((int(r["o"].value) if r["o"] is not None else None, r["m"].value)
                          for r in found), key=lambda x: (x[0] is None, x[0] or 0, x[1]))
        seen: set[int] = set()
        for position, (order, member) in enumerate(members, start=rule.start):
            status = ("missing order" if order is None else "duplicate" if order in seen
                      else "gap" if order != position else "ok")
            seen.add(order or 0)
            rows.append({**_row(engine, draft, member), "order": order, "status": status})
    return rows


def find_orphans(engine: Instantiator, draft: Draft, args: dict[str, Any]) -> list[dict]:
    linked = {r["o"].value for r in engine.store.query(_LINKED, paper_id=draft.pid)}
    top = tuple(engine.ir.top_level)
    return [_row(engine, draft, iri) for iri in draft.index.entities()
            if iri not in linked and not (top and draft.admitted(iri, top))]


READS = {"list_instances": list_instances, "describe_instance": describe_instance,
         "describe_tool": describe_tool, "find_missing": find_missing,
         "show_sequence": show_sequence, "find_orphans": find_orphans}
