"""kgctl.store: one named graph per paper, atomic writes, provenance, replayable traces.

>>> store = open_store()
>>> type(store).__name__, store.papers()
('EmbeddedStore', [])
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgctl.errors import InputError, StoreError
from kgctl.store.base import CallRecord, Evidence, GraphStore
from kgctl.store.canonical import canonical_nquads
from kgctl.store.embedded import EmbeddedStore
from kgctl.store.provenance import utc_now

__all__ = ["CallRecord", "EmbeddedStore", "Evidence", "GraphStore", "canonical_nquads",
           "command_store", "is_store", "open_store", "utc_now"]


def is_store(path: Path | str) -> bool:
    """Whether `path` holds an embedded store (its database's ``CURRENT`` file)."""
    return (Path(path) / "CURRENT").is_file()


def open_store(*, path: Path | str | None = None, endpoint: str | None = None,
               create: bool = True) -> GraphStore:
    """An EmbeddedStore at `path` (in memory if neither is given) or a RemoteStore at the
    SPARQL `endpoint` (query URL; update at ``<endpoint>``-derived URLs, see RemoteStore).
    Without `create`, a `path` that holds no store is an error rather than a new store."""
    if path is not None and endpoint is not None:
        raise InputError("give a store path or an endpoint, not both")
    if endpoint is not None:
        from kgctl.store.remote import RemoteStore

        return RemoteStore.from_endpoint(endpoint)
    if path is not None and not create and not is_store(path):
        raise StoreError(f"no store at {path} (kgctl extract, kgctl demo and kgctl store "
                         "import make one)")
    return EmbeddedStore(Path(path) if path is not None else None)


@contextmanager
def command_store(*, path: Path | None, endpoint: str | None,
                  create: bool) -> Iterator[GraphStore]:
    """The store a command works on, closed after it. A store folder the command made and
    left empty is removed again when the command fails: a failed command leaves no store
    behind (and an interrupted one keeps what it wrote)."""
    new = path is not None and endpoint is None and not Path(path).exists()
    store = open_store(path=path, endpoint=endpoint, create=create)
    try:
        yield store
    except BaseException:
        empty = new and not store.papers()
        store.close()
        if empty:
            shutil.rmtree(path, ignore_errors=True)
        raise
    store.close()
