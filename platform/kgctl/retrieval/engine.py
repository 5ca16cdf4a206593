"""The retrieval tools: exploration of the graph and step-by-step query construction.

Every construction step builds a new draft, renders it, parses it back with pyoxigraph, dry-runs
it on the store (LIMIT 1, or a COUNT for an ungrouped aggregate) and commits it only when that
succeeds and is non-empty; otherwise :class:`Rejected` carries the feedback and the container
keeps its previous draft. Values enter the model as RDF terms only. The tools live in modules by
kind (:mod:`exploration`, :mod:`filters`, :mod:`patterns`, :mod:`shaping`); this class joins
them with the container life cycle.
"""

from __future__ import annotations

from kgctl.retrieval.drafts import Draft
from kgctl.retrieval.exploration import ExplorationTools
from kgctl.retrieval.feedback import QueryAnswer, QueryView, reject
from kgctl.retrieval.filters import FilterTools
from kgctl.retrieval.model import SelectQuery
from kgctl.retrieval.patterns import PatternTools
from kgctl.retrieval.prune import prune
from kgctl.retrieval.shaping import MAX_ROWS, ShapingTools
from kgctl.retrieval.terms import Var

DEFAULT_ROWS = 100


class QueryEngine(ExplorationTools, FilterTools, PatternTools, ShapingTools):
    """Tool implementations over one store and one IR. `session` keys the containers."""

    def new_query(self, session: str, template: str) -> QueryView:
        self.refresh()
        found = self.templates.get(template.strip())
        if found is None:
            raise reject("unknown_template", f"no template {template!r}", field="template",
                         value=template, allowed=tuple(self.list_templates().templates),
                         hint="pick one of the allowed templates")
        draft = Draft(template=found.name, variables=dict(found.variables), query=SelectQuery(
            prefixes=self.prefixes, select=tuple(Var(name=v) for v in found.select),
            where=found.where))
        ms = self._dry_run(draft, None)
        container = self.registry.create(session, draft)
        return self._view(container.id, draft, f"new query from template {found.name}", ms)

    def undo(self, session: str, query_id: str) -> QueryView:
        container = self._container(session, query_id)
        if not container.undo():
            raise reject("nothing_to_undo", "the container is at its template",
                         field="query_id", value=query_id, retryable=False,
                         sparql=container.current.sparql())
        return self._view(query_id, container.current, "undid the last step")

    def show_query(self, session: str, query_id: str) -> QueryView:
        container = self._container(session, query_id)
        return self._view(query_id, container.current, "unchanged")

    def execute_query(self, session: str, query_id: str, *,
                      limit: int = DEFAULT_ROWS) -> QueryAnswer:
        draft = self._draft(session, query_id)
        if not 0 < limit <= MAX_ROWS:
            raise reject("invalid_value", f"limit must be 1..{MAX_ROWS}", field="limit",
                         value=limit, sparql=draft.sparql())
        return self.run(draft, query_id=query_id, limit=limit)

    def run(self, draft: Draft, *, query_id: str = "", limit: int = MAX_ROWS) -> QueryAnswer:
        query = prune(draft.query)
        own = query.limit is not None and query.limit <= limit  # a top-k answer is complete
        cap = query.limit if own else limit
        # one row more tells a cut answer, within the row cap of servers (Virtuoso's 10000)
        probe = not own and cap < MAX_ROWS
        solutions = list(self._select(query.to_sparql(limit=cap + 1 if probe else cap)))
        columns = tuple(query.columns())
        rows = tuple(tuple(None if s[c] is None else s[c].value for c in columns)
                     for s in solutions[:cap])
        return QueryAnswer(query_id=query_id, sparql=query.to_sparql(), columns=columns,
                           rows=rows, truncated=len(solutions) > cap or (
                               not own and not probe and len(solutions) == cap))
