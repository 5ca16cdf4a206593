"""Load a benchmark folder (``<category>/<paper>.json``) into validated record documents.

A malformed file becomes a ``Problem`` naming the file and the field; the other files still
load, so the rest of the benchmark still scores.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kgctl.errors import InputError
from kgctl.evaluation.schema import record_schema

Record = BaseModel  # a document of a category, as the pack's record schema defines it


class Problem(BaseModel):
    """Something that could not be scored, and why: a finding, not a failure."""

    model_config = ConfigDict(frozen=True)
    paper: str
    category: str
    file: str = ""
    field: str = ""
    message: str

    def __str__(self) -> str:
        source = self.file or f"{self.category}/{self.paper}"
        where = ": ".join(x for x in (source, self.field) if x)
        return f"{where}: {self.message}"


class Loaded(BaseModel):
    """Documents by paper and category, and the problems met while loading them."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    docs: dict[str, dict[str, Record]]
    problems: tuple[Problem, ...] = ()

    def only(self, papers: Iterable[str]) -> Loaded:
        """The part of these documents for `papers`, with their problems and those of no paper."""
        chosen = set(papers)
        return Loaded(docs={p: d for p, d in self.docs.items() if p in chosen},
                      problems=tuple(q for q in self.problems if q.paper in chosen or not q.paper))


def parse_document(
    category: str, data: Any, *, paper: str = "", file: str = ""
) -> Record | Problem:
    """Validate one document of a category (the default pack's record schema); a Problem
    names the first offending field."""
    try:
        return record_schema().documents[category].model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return Problem(paper=paper, category=category, file=file, field=field,
                       message=f"{err['msg']}{more}")


def load_benchmark(root: Path, *, categories: tuple[str, ...] | None = None) -> Loaded:
    """Every ``<category>/<paper>.json`` under root (categories: the record schema's); a
    missing category is a Problem."""
    categories = categories if categories is not None else record_schema().categories
    if not root.is_dir():
        raise InputError(f"no such benchmark folder: {root}")
    docs: dict[str, dict[str, Record]] = {}
    problems: list[Problem] = []
    for category in categories:
        folder = root / category
        if not folder.is_dir():
            problems.append(Problem(paper="*", category=category, file=str(folder),
                                    message="category folder missing"))
            continue
        for path in sorted(folder.glob("*.json")):
            paper = path.stem
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                problems.append(Problem(paper=paper, category=category, file=str(path),
                                        message=f"not readable JSON: {exc}"))
                continue
            parsed = parse_document(category, data, paper=paper, file=str(path))
            if isinstance(parsed, Problem):
                problems.append(parsed)
            else:
                docs.setdefault(paper, {})[category] = parsed
    if not docs and not problems:
        raise InputError(f"no <category>/<paper>.json files under {root}")
    return Loaded(docs=docs, problems=tuple(problems))
