"""Pattern tools: schema paths (required, optional or excluded), single triples and the
provenance of an entity (the paper's named graph that states it)."""

from __future__ import annotations

from kgctl.errors import KgctlError
from kgctl.retrieval.core import NODE, EngineCore
from kgctl.retrieval.drafts import Draft, add, fresh, triple
from kgctl.retrieval.feedback import Option, QueryView, reject
from kgctl.retrieval.mining import DATA_SOURCE
from kgctl.retrieval.model import Element, Filter, GraphPattern, Group, Minus, Optional, Triple
from kgctl.retrieval.prune import prune
from kgctl.retrieval.schema import MAX_PATH_OPTIONS, Hop, SchemaPath, snake
from kgctl.retrieval.templates import type_patterns
from kgctl.retrieval.terms import RDF_TYPE, Call, Var
from kgctl.retrieval.terms import Path as PropertyPath

MODES = ("required", "optional", "exclude")
PATH_CANDIDATES = 12  # schema paths dry-run per add_path_constraint
PAPER = NODE  # class of a named graph variable


class PatternTools(EngineCore):
    def add_path_constraint(self, session: str, query_id: str, variable: str,
                            target_class: str, *, option: int | None = None,
                            target_variable: str | None = None,
                            mode: str = "required") -> QueryView:
        draft = self._draft(session, query_id)
        var = self._node_var(draft, variable, query_id)
        self._mode(draft, mode)
        start = draft.variables[var]
        goal = self._class(target_class, "target_class", sparql=draft.sparql())
        if target_variable is not None:
            self._var(draft, target_variable, query_id)
        paths = self._live_paths(draft, var, start, goal, target_variable)
        options = tuple(Option(rank=i, value=p.describe(self.ir), score=p.cost,
                               label=f"{len(p.hops)} hops, used {p.support} times in the data")
                        for i, p in enumerate(paths))
        if not paths:
            raise reject("no_path", f"no schema path from {self.ir.curie(start)} to "
                         f"{self.ir.curie(goal)} that the rows of this query follow",
                         field="target_class", value=target_class,
                         hint="describe_class shows what this class connects to",
                         retryable=False, sparql=draft.sparql())
        tied = [p for p in paths if p.cost == paths[0].cost]
        if option is None and len(tied) > 1:
            raise reject("ambiguous_path", f"{len(tied)} equally short paths; choose one",
                         field="option", options=options,
                         hint="call again with option=<rank>; ranked by how often the data "
                              "uses them", sparql=draft.sparql())
        if option is not None and not 0 <= option < len(paths):
            raise reject("unknown_option", f"option {option} out of range", field="option",
                         value=option, options=options, sparql=draft.sparql())
        chosen = paths[option or 0]
        items, variables, end = self._path_items(draft, var, chosen, goal, target_variable)
        text = f"?{var} {chosen.describe(self.ir)} ?{end}"
        if mode == "exclude":
            return self._commit(session, query_id, draft,
                                add(draft, Minus(group=Group(items=tuple(items)))),
                                f"no {text}")
        block = items if mode == "required" else [Optional(group=Group(items=tuple(items)))]
        new = add(draft, *block, variables=variables,
                  select=() if target_variable else (end,))
        return self._commit(session, query_id, draft, new, f"{mode} {text}")

    def add_triple(self, session: str, query_id: str, subject: str, property: str, *,
                   object: str | None = None, mode: str = "required",
                   inverse: bool = False) -> QueryView:
        draft = self._draft(session, query_id)
        var = self._var(draft, subject, query_id)
        self._mode(draft, mode)
        prop = self._property(property, draft, var, inverse=inverse)
        info = self.ir.properties.get(prop)
        obj_class = (self._domain_class(info) if inverse
                     else self._range_class(property, draft.variables[var]))
        name = self._name(draft, object or fresh(draft, snake(prop).removeprefix("has_")),
                          new=False)
        if name in draft.variables:
            have = draft.variables[name]
            ok = (self.schema.compatible(have, obj_class) if obj_class in self.ir.classes
                  and have in self.ir.classes else (have in self.ir.classes) == (
                      obj_class in self.ir.classes))
            if not ok:
                raise reject("range_mismatch", f"?{name} is {self.ir.curie(have)}, "
                             f"{self.ir.curie(prop)} needs {self.ir.curie(obj_class)}",
                             field="object", value=name, sparql=draft.sparql())
        s, o = (name, var) if inverse else (var, name)
        pattern: tuple[Element, ...] = (triple(s, prop, o),)
        if (not inverse and obj_class not in self.ir.classes and obj_class != NODE
                and name not in draft.variables
                and self.schema.mined.uses.get(prop, (0, 0, ()))[0]):
            # values of a literal type, where the data also has nodes: keep the literals only
            pattern += (Filter(expr=Call(name="ISLITERAL", args=(Var(name=name),))),)
        elements: tuple[Element, ...] = {"required": pattern,
                                         "optional": (Optional(group=Group(items=pattern)),),
                                         "exclude": (Minus(group=Group(items=pattern)),)}[mode]
        variables = {} if mode == "exclude" or name in draft.variables else {name: obj_class}
        new = add(draft, *elements, variables=variables, select=tuple(variables))
        return self._commit(session, query_id, draft, new,
                            f"{mode} ?{s} {self.ir.curie(prop)} ?{o}")

    def add_provenance(self, session: str, query_id: str, variable: str, *,
                       name: str | None = None) -> QueryView:
        """Bind the named graph (the paper) that states the entity of `variable`:
        ``GRAPH ?paper { ?entity a ?type }``; one paper per entity in a per-paper store."""
        draft = self._draft(session, query_id)
        var = self._node_var(draft, variable, query_id)
        paper = self._name(draft, name) if name else fresh(draft, f"{var}_paper")
        typed = fresh(draft, f"{var}_graph_type", taken=(paper,))
        block = GraphPattern(graph=Var(name=paper), group=Group(items=(triple(var, RDF_TYPE,
                                                                              typed),)))
        new = add(draft, block, variables={paper: PAPER}, select=(paper,))
        return self._commit(session, query_id, draft, new, f"?{paper} = the paper of ?{var}")

    # -- helpers ------------------------------------------------------------------------------
    def _live_paths(self, draft: Draft, var: str, start: str, goal: str,
                    target_variable: str | None) -> list[SchemaPath]:
        """Schema paths from the mined graph and the T-Box, each dry-run from the rows of the
        current query: only those that reach something are offered, most used first."""
        live = []
        for path in self.schema.paths(start, goal, limit=PATH_CANDIDATES):
            items, variables, _ = self._path_items(draft, var, path, goal, target_variable)
            if self._reaches(add(draft, *items, variables=variables)):
                live.append(path)
        return live[:MAX_PATH_OPTIONS]

    def _reaches(self, draft: Draft) -> bool:
        text = prune(draft.query).to_sparql(limit=1)
        try:
            return bool(list(self._select(text)))
        except (KgctlError, OSError, ValueError, SyntaxError):
            return False

    def _mode(self, draft: Draft, mode: str) -> None:
        if mode not in MODES:
            raise reject("invalid_value", f"unknown mode {mode!r}", field="mode", value=mode,
                         allowed=MODES, sparql=draft.sparql())

    def _path_items(self, draft: Draft, var: str, path: SchemaPath, goal: str,
                    target_variable: str | None) -> tuple[list[Element], dict[str, str], str]:
        """Triples along `path`; a new end variable is typed `goal` by a type pattern unless the
        T-Box guarantees it (the last property's range, or domain when walked backwards, is one
        class at or below `goal`): a union domain or range, or what only the data shows,
        guarantees nothing."""
        items: list[Element] = []
        variables: dict[str, str] = {}
        at = var
        for i, hop in enumerate(path.hops):
            last = i == len(path.hops) - 1
            cls = self.schema.narrower(hop.to_class, goal) if last else hop.to_class
            nxt = target_variable if (last and target_variable) else fresh(
                draft, snake(cls), taken=tuple(variables))
            s, o = (nxt, at) if hop.inverse else (at, nxt)
            items.append(Triple(s=Var(name=s), p=PropertyPath(steps=(hop.step().model_copy(
                update={"inverse": False}),)), o=Var(name=o)))
            if nxt not in draft.variables:
                variables[nxt] = cls
            if last and not target_variable and not self._guaranteed(hop, cls):
                items.extend(type_patterns(nxt, cls, self.schema))
            at = nxt
        return items, variables, at

    def _guaranteed(self, hop: Hop, cls: str) -> bool:
        info = self.ir.properties.get(hop.property)
        if info is None or info.ontology == DATA_SOURCE:  # the data guarantees nothing
            return False
        ends = self.schema.end_classes(info, inverse=hop.inverse)
        return len(ends) == 1 and self.ir.is_a(ends[0], cls) and not hop.either

