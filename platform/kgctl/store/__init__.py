"""kgctl.store: one named graph per paper, atomic writes, provenance, replayable traces.

>>> store = open_store()
>>> type(store).__name__, store.papers()
('EmbeddedStore', [])
"""

from __future__ import annotations

from pathlib import Path

from kgctl.errors import InputError
from kgctl.store.base import CallRecord, Evidence, GraphStore
from kgctl.store.canonical import canonical_nquads
from kgctl.store.embedded import EmbeddedStore
from kgctl.store.provenance import utc_now

__all__ = ["CallRecord", "EmbeddedStore", "Evidence", "GraphStore", "canonical_nquads",
           "open_store", "utc_now"]


def open_store(*, path: Path | str | None = None, endpoint: str | None = None) -> GraphStore:
    """An EmbeddedStore at `path` (in memory if neither is given) or a RemoteStore at the
    SPARQL `endpoint` (query URL; update at ``<endpoint>``-derived URLs, see RemoteStore)."""
    if path is not None and endpoint is not None:
        raise InputError("give a store path or an endpoint, not both")
    if endpoint is not None:
        from kgctl.store.remote import RemoteStore

        return RemoteStore.from_endpoint(endpoint)
    return EmbeddedStore(Path(path) if path is not None else None)
