"""Harvest labels and identifiers of a target class into a cached label index.

Pages are keyset-paginated over the sorted subject IRIs, written to a partial file
as they arrive so an interrupted harvest resumes, and turned into a LabelIndex only when the
last page is in. The cache key is endpoint + spec + data fingerprint; the previous good cache is
replaced atomically only after a new one is complete.

>>> from kgctl.grounding.spec import spec_for_class
>>> spec = spec_for_class(None)  # the default pack's first spec
>>> q = page_query(spec, lo="ex:a", hi="ex:b")
>>> q.count("UNION") == len(spec.labels) + len(spec.identifiers), 'STR(?s) <= "ex:b"' in q
(True, True)
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgctl.errors import InputError, StoreError
from kgctl.grounding.index import ID_FIELD, LABEL_FIELD, LabelIndex, Row
from kgctl.grounding.sources import SparqlSource
from kgctl.grounding.spec import GroundingSpec, PathField
from kgctl.store.endpoint import RowCapError
from kgctl.store.sparql import term_to_sparql

INDEX_FORMAT = "5"  # 5: the index keeps its naming
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
Progress = Callable[[int, int], None]  # (rows so far, subjects so far)


def default_cache_dir() -> Path:
    return Path(os.environ.get("KGCTL_CACHE", Path.home() / ".cache" / "kgctl")) / "grounding"


def harvest_index(source: SparqlSource, spec: GroundingSpec, *, cache_dir: Path | None = None,
                  refresh: bool = False, progress: Progress | None = None) -> LabelIndex:
    """The label index of `spec` at `source`, from the cache when it is current."""
    cache_dir = Path(cache_dir or default_cache_dir())
    cache_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = data_fingerprint(source, spec)
    key = cache_key(source.name, spec, fingerprint)
    final = cache_dir / f"{key}.index"
    if final.is_file() and not refresh:
        return load_cache(final)
    validate_spec(source, spec)
    partial = cache_dir / f"{key}.partial"
    if refresh:
        partial.unlink(missing_ok=True)
    rows = harvest_rows(source, spec, partial=partial, progress=progress)
    index = LabelIndex.build(rows, naming=spec.naming)
    save_cache(final, index)
    partial.unlink(missing_ok=True)
    (cache_dir / f"{_stream_key(source.name, spec)}.current").write_text(final.name)
    return index


def last_good_index(source_name: str, spec: GroundingSpec, *,
                    cache_dir: Path | None = None) -> LabelIndex | None:
    """The most recent complete cache for (source, spec), whatever its data fingerprint."""
    cache_dir = Path(cache_dir or default_cache_dir())
    pointer = cache_dir / f"{_stream_key(source_name, spec)}.current"
    if not pointer.is_file():
        return None
    path = cache_dir / pointer.read_text().strip()
    return load_cache(path) if path.is_file() else None


def harvest_rows(source: SparqlSource, spec: GroundingSpec, *, partial: Path,
                 progress: Progress | None = None) -> list[Row]:
    """All rows, page by page, resuming after the last complete page of `partial`.

    Keyset pages: the subject IRIs are listed once and sorted here; each page asks for the
    fields of the subjects in one ``[lo, hi]`` range of that order (no server-side sorting,
    unless a server row cap makes the listing itself page). A page cut at the cap is split.
    """
    rows, after, subjects = _resume(partial)
    todo = sorted(s for s in list_subjects(source, spec) if s > after)
    with partial.open("a", encoding="utf-8") as out:
        for start in range(0, len(todo), spec.page_size):
            block = todo[start:start + spec.page_size]
            page_rows = _page_rows(source, spec, block)
            out.write(json.dumps({"after": block[-1], "rows": page_rows}) + "\n")
            out.flush()
            rows.extend(page_rows)
            subjects += len(block)
            if progress is not None:
                progress(len(rows), subjects)
    return [tuple(r) for r in rows]


def list_subjects(source: SparqlSource, spec: GroundingSpec) -> list[str]:
    """IRIs of the target class's instances; keyset pages (the server's string order) past a
    row cap (OFFSET past the cap fails on Virtuoso)."""
    cls = term_to_sparql(NamedNode(spec.target_class))
    query = f"SELECT ?s WHERE {{ ?s a {cls} . FILTER(isIRI(?s)) }}"
    try:
        return [s for (s,) in source.select(query) if s is not None]
    except RowCapError as exc:
        page = max(1, exc.cap - 1)
    found: list[str] = []
    while True:
        after = f" && STR(?s) > {term_to_sparql(Literal(found[-1]))}" if found else ""
        part = source.select(f"SELECT ?s WHERE {{ ?s a {cls} . FILTER(isIRI(?s){after}) }} "
                             f"ORDER BY STR(?s) LIMIT {page}")
        found += [s for (s,) in part if s is not None]
        if len(part) < page:
            return found


def _page_rows(source: SparqlSource, spec: GroundingSpec, block: list[str]) -> list[tuple]:
    """Rows of the subjects in `block`; halves the block when the server caps the answer."""
    try:
        page = source.select(page_query(spec, lo=block[0], hi=block[-1]))
    except RowCapError:
        if len(block) == 1:
            raise
        middle = len(block) // 2
        return _page_rows(source, spec, block[:middle]) + _page_rows(source, spec,
                                                                     block[middle:])
    return [(s, f or "", v) for s, f, v in page]


def _resume(partial: Path) -> tuple[list, str, int]:
    rows: list = []
    after, subjects = "", 0
    if not partial.is_file():
        return rows, after, subjects
    with partial.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                page = json.loads(line)
            except json.JSONDecodeError:
                break  # a page cut short by an interruption: fetch it again
            rows.extend(page["rows"])
            after = page["after"]
            subjects += len({r[0] for r in page["rows"]})
    partial.write_text("".join(json.dumps({"after": after, "rows": rows}) + "\n")
                       if rows else "")
    return rows, after, subjects


def data_fingerprint(source: SparqlSource, spec: GroundingSpec) -> str:
    """Instance count, last instance IRI and label-predicate triple counts."""
    cls = term_to_sparql(NamedNode(spec.target_class))
    first_hops = sorted({term_to_sparql(NamedNode(f.path[0])) for f in spec.labels})
    rows = source.select(
        f"SELECT (COUNT(?s) AS ?n) (MAX(STR(?s)) AS ?last) WHERE {{ ?s a {cls} }}")
    for hop in first_hops:  # label-predicate triple counts, not joined: cheap on any store
        rows += source.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s {hop} ?o }}")
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def validate_spec(source: SparqlSource, spec: GroundingSpec) -> None:
    """Refuse an empty class and predicates that no instance of the class carries."""
    cls = term_to_sparql(NamedNode(spec.target_class))
    if not source.ask(f"ASK {{ ?s a {cls} }}"):
        raise InputError(f"class <{spec.target_class}> has no instances at {source.name}")
    for field in (*spec.labels, *spec.identifiers):
        if not source.ask(f"ASK {{ ?s a {cls} . {_path_pattern(field, '?s', '?v', '?x')} }}"):
            raise InputError(
                f"no instance of <{spec.target_class}> at {source.name} has "
                + "/".join(f"<{p}>" for p in field.path))


def page_query(spec: GroundingSpec, *, lo: str, hi: str) -> str:
    """One page: all fields of the instances whose IRI lies in ``[lo, hi]``."""
    cls = term_to_sparql(NamedNode(spec.target_class))
    within = (f"?s a {cls} . FILTER(STR(?s) >= {term_to_sparql(Literal(lo))} && "
              f"STR(?s) <= {term_to_sparql(Literal(hi))})")
    branches = [f'{{ {within} BIND("" AS ?f) }}']
    for i, field in enumerate(spec.labels):
        branches.append(_branch(field, f"{LABEL_FIELD}{field.priority}", within, node=f"?l{i}"))
    for i, field in enumerate(spec.identifiers):
        branches.append(_branch(field, f"{ID_FIELD}{field.kind}", within, node=f"?i{i}"))
    union = "\n  UNION ".join(branches)
    return f"SELECT ?s ?f ?v WHERE {{\n  {union}\n}}"


def _branch(field: PathField, code: str, within: str, *, node: str) -> str:
    return (f"{{ {within} {_path_pattern(field, '?s', '?v', node)} "
            f"BIND({term_to_sparql(Literal(code))} AS ?f) }}")


def _path_pattern(field: PathField, subject: str, value: str, node: str) -> str:
    hops = [term_to_sparql(NamedNode(p)) for p in field.path]
    if len(hops) == 1:
        return f"{subject} {hops[0]} {value} ."
    return f"{subject} {hops[0]} {node} . {node} {hops[1]} {value} ."


def cache_key(source_name: str, spec: GroundingSpec, fingerprint: str) -> str:
    text = "\n".join([INDEX_FORMAT, source_name, spec.fingerprint(), fingerprint])
    return f"{spec.name}-{hashlib.sha256(text.encode()).hexdigest()[:20]}"


def _stream_key(source_name: str, spec: GroundingSpec) -> str:
    text = "\n".join([INDEX_FORMAT, source_name, spec.fingerprint()])
    return f"{spec.name}-{hashlib.sha256(text.encode()).hexdigest()[:20]}"


def save_cache(path: Path, index: LabelIndex) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as out:
        pickle.dump(index.state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)


def load_cache(path: Path) -> LabelIndex:
    try:
        with Path(path).open("rb") as handle:
            return LabelIndex.from_state(pickle.load(handle))
    except (OSError, pickle.UnpicklingError, EOFError, KeyError) as exc:
        raise StoreError(f"grounding cache {path} is unreadable ({exc}); use --refresh") from exc
