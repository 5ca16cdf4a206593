"""Fixed read-out: a domain pack's ``readout/<category>.rq`` files run on one paper's named
graph, and the declarative ``readout/<category>.yaml`` mappings turn their bindings into JSON
records of the benchmark schema. No per-paper or per-value code: what the queries cannot read
back does not count.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, QuerySolutions

from kgctl.errors import InputError
from kgctl.evaluation.loader import Loaded, Problem, parse_document
from kgctl.evaluation.schema import record_schema
from kgctl.packs import load_pack
from kgctl.store.base import GraphStore
from kgctl.store.embedded import EmbeddedStore
from kgctl.store.iris import graph_iri

XSD = "http://www.w3.org/2001/XMLSchema#"
INTEGER_TYPES = {XSD + t for t in ("integer", "int", "long", "short", "nonNegativeInteger",
                                   "positiveInteger")}
FLOAT_TYPES = {XSD + t for t in ("decimal", "double", "float")}
Row = dict[str, Any]


@cache
def load_mapping(category: str, *, folder: Path | None = None) -> tuple[str, dict]:
    """(query text, mapping) of a category from the default pack's read-out folder (or
    another folder)."""
    base = folder or readout_folder(None)
    path = base / f"{category}.yaml"
    try:
        mapping = yaml.safe_load(path.read_text(encoding="utf-8"))
        query = (base / mapping["query"]).read_text(encoding="utf-8")
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read the read-out mapping: {exc}") from None
    return query, mapping


def readout_folder(domain: str | Path | None) -> Path:
    """The read-out folder of a domain pack (None: the default pack)."""
    pack = load_pack(domain)
    folder = pack.part("readout")
    if folder is None:
        raise InputError(f"domain {pack.name!r} has no read-out queries (readout: in "
                         "domain.yaml)")
    return folder


def read_out(store: GraphStore, paper_id: str, *, categories: Iterable[str] | None = None,
             folder: Path | None = None) -> dict[str, dict]:
    """JSON records of every category for one paper, read back by the fixed queries (of
    `folder`, default: the default pack's)."""
    local = paper_copy(store, paper_id)
    result = {}
    for category in categories if categories is not None else record_schema().categories:
        query, mapping = load_mapping(category, folder=folder)
        rows = solutions_to_rows(local.query(query, paper_id=paper_id))
        result[category] = map_rows(rows, mapping)
    return result


def read_out_loaded(store: GraphStore, papers: Iterable[str], *,
                    categories: tuple[str, ...] | None = None, folder: Path | None = None
                    ) -> Loaded:
    """Read-outs of several papers, validated like ground-truth files; a paper missing from
    the store is a problem (its gold then counts as FN), not a failure."""
    docs: dict = {}
    problems = []
    for paper in papers:
        if not store.has_paper(paper):
            problems.append(Problem(paper=paper, category="*", message="paper not in the store"))
            continue
        for category, data in read_out(store, paper, categories=categories,
                                                 folder=folder).items():
            parsed = parse_document(category, data, paper=paper, file=f"read-out {category}")
            if isinstance(parsed, Problem):
                problems.append(parsed)
            else:
                docs.setdefault(paper, {})[category] = parsed
    return Loaded(docs=docs, problems=tuple(problems))


def paper_copy(store: GraphStore, paper_id: str) -> GraphStore:
    """The store itself when embedded; else the paper's graph read in one request into memory.

    The fixed queries then run on one snapshot of the paper, on the same engine whatever the
    server: one round trip per paper, and no server's plan for these many-OPTIONAL queries
    (Virtuoso took 0.2-0.5 s for steps.rq on one paper) or its lexical forms in the way.
    """
    if isinstance(store, EmbeddedStore):
        return store
    copy = EmbeddedStore()
    graph = graph_iri(paper_id)
    copy.replace_paper(paper_id, (Quad(t.subject, t.predicate, t.object, graph)
                                  for t in store.triples(paper_id)))
    return copy


def solutions_to_rows(solutions: QuerySolutions) -> list[Row]:
    """Query solutions as dicts of Python values (unbound variables left out)."""
    names = [v.value for v in solutions.variables]
    return [{n: term_value(s[n]) for n in names if s[n] is not None} for s in solutions]


def term_value(term: NamedNode | BlankNode | Literal) -> Any:
    """Python value of an RDF term: typed literals become int/float/bool, nodes their id."""
    if isinstance(term, Literal):
        datatype = term.datatype.value
        if datatype in INTEGER_TYPES:
            return int(term.value)
        if datatype in FLOAT_TYPES:
            return float(term.value)
        if datatype == XSD + "boolean":
            return term.value in ("true", "1")
        return term.value
    return str(term)


def map_rows(rows: list[Row], mapping: dict) -> dict:
    """Apply a declarative mapping (see queries/steps.yaml) to query rows.

    >>> rows = [{"m": "a", "f": "[Cu2]", "n": "x"}, {"m": "a", "f": "[Cu2]", "n": "y"}]
    >>> map_rows(rows, {"root": "r", "list": {"key": "m", "fields": {
    ...     "formula": "f", "names": {"var": "n", "many": True}}}})
    {'r': [{'formula': '[Cu2]', 'names': ['x', 'y']}]}
    """
    return {mapping["root"]: _build_list(rows, mapping["list"])}


def _build_list(rows: list[Row], spec: dict) -> list[dict]:
    groups: dict[Any, list[Row]] = {}
    for row in rows:
        if spec["key"] in row:
            groups.setdefault(row[spec["key"]], []).append(row)
    sort_var = spec.get("sort")

    def order(item: tuple[Any, list[Row]]) -> tuple:
        key, members = item
        first = min((r[sort_var] for r in members if sort_var in r), default=None, key=str)
        return (first is None, _sortable(first), str(key))

    return [_build_item(members, spec) for _, members in sorted(groups.items(), key=order)]


def _build_item(rows: list[Row], spec: dict) -> dict:
    wrap_value = _first(rows, spec["wrap"]) if "wrap" in spec else None
    obj = _build_fields(rows, spec["fields"], wrap_value)
    return {wrap_value: obj} if wrap_value is not None else obj


def _build_fields(rows: list[Row], fields: dict, wrap_value: Any) -> dict:
    obj: dict[str, Any] = {}
    for name, raw in fields.items():
        field = {"var": raw} if isinstance(raw, str) else raw
        if "only" in field and wrap_value not in field["only"]:
            continue
        if "list" in field:
            items = _build_list(rows, field["list"])
            if field.get("numbered"):
                for n, item in enumerate(items, start=1):
                    obj.update({f"{k}{n}": v for k, v in item.items()})
            elif items:
                obj[name] = items
        elif "object" in field:
            sub = _build_fields(rows, field["object"], wrap_value)
            if sub:
                obj[name] = sub
        else:
            found = sorted({r[field["var"]] for r in rows if field["var"] in r}, key=_sortable)
            if field.get("many"):
                if found:
                    obj[name] = [str(v) for v in found]
            elif found:
                obj[name] = _convert(found[0], field.get("type"))
    return obj


def _first(rows: list[Row], var: str) -> Any:
    found = sorted({r[var] for r in rows if var in r}, key=_sortable)
    return found[0] if found else None


def _convert(value: Any, kind: str | None) -> Any:
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).casefold() in ("true", "1")
    return value


def _sortable(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))
