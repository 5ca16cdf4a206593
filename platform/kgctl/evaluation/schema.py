"""The record schema of a records benchmark, given by its domain pack (hook ``records``):
the document model of each category (in scoring order), optionally a second scoring rule (a
published protocol the figures can be put beside) and the oracle agent that builds a
ground-truth paper through the compiled tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kgctl.errors import InputError
from kgctl.evaluation.scorer import ScoringRule
from kgctl.packs import load_pack


@dataclass(frozen=True)
class RecordSchema:
    documents: Mapping[str, type[BaseModel]]  # category -> document model, in scoring order
    compatible: ScoringRule | None = None  # the second scorer every report carries
    # (MCP client, paper id) -> an agent with one async method per category (taking the raw
    # gold JSON) and `calls`, `rejected`, `findings`
    oracle: Callable[[Any, str], Any] | None = None

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(self.documents)


def record_schema(domain: str | Path | None = None) -> RecordSchema:
    """The record schema of a domain pack (None: the default pack)."""
    pack = load_pack(domain)
    schema = pack.hook("records")
    if not isinstance(schema, RecordSchema):
        raise InputError(f"domain {pack.name!r} names no record schema (hooks: records: in its "
                         "domain.yaml)")
    return schema
