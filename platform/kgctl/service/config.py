"""How `kgctl serve` behaves: every limit is an option of the command."""

from __future__ import annotations

import os
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field

from kgctl.service.execution import Limits
from kgctl.service.hosts import LOOPBACK_NAMES
from kgctl.service.static_examples import load_examples, ontology_prefixes

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_MAX_BYTES = 64_000_000
DEFAULT_WORKERS = min(16, 2 * (os.cpu_count() or 1))  # each answers one request at a time
DEFAULT_LONG_QUERIES = 2
DEFAULT_WORKER_MEMORY_MB = 4096
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0


class ServiceConfig(BaseModel):
    model_config = ConfigDict(frozen=True)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_BYTES
    workers: int = DEFAULT_WORKERS
    long_queries: int = DEFAULT_LONG_QUERIES
    worker_memory_mb: int = DEFAULT_WORKER_MEMORY_MB  # a worker past it dies: 500, not swap
    update_token: str | None = None  # None: updates disabled
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all
    union_default: bool = False  # default graph = union of all graphs
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES  # Host headers answered ('*': any)
    allow_service: tuple[str, ...] = ()  # endpoints SERVICE / LOAD may contact
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    base_iri: str | None = None  # None: the URL of the endpoint the request went to
    # the page's example queries (default: the default domain pack's)
    examples: tuple[dict[str, str], ...] = Field(default_factory=lambda: tuple(load_examples()))
    prefixes: dict[str, str] = Field(default_factory=ontology_prefixes)  # the ontologies'

    @cached_property
    def limits(self) -> Limits:
        return Limits(max_rows=self.max_rows, max_bytes=self.max_bytes)
