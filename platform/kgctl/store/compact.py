"""Compaction of an embedded store: its quads bulk-loaded into a fresh database beside it, which
then takes the store's place.

A store written one transaction per tool call keeps the traces of every small write (about twice
the bytes per quad of a bulk-loaded one); RocksDB's own `optimize` does not reclaim them. The old
database stays locked and untouched until the new one holds the same number of quads; then both
are closed and swapped by two renames (a compaction interrupted between them is finished by the
next one). Stop the processes that use the store first.

>>> import tempfile
>>> from pyoxigraph import Literal, NamedNode, Triple
>>> from kgctl.store.embedded import EmbeddedStore
>>> folder = Path(tempfile.mkdtemp()) / "store"
>>> store = EmbeddedStore(folder)
>>> _ = store.write("p1", insert=[Triple(NamedNode("urn:a"), NamedNode("urn:b"), Literal("c"))])
>>> store.close(); del store
>>> report = compact(folder)
>>> report.quads, EmbeddedStore(folder).papers()
(1, ['p1'])
"""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pyoxigraph import Store

from kgctl.errors import InputError, StoreError
from kgctl.store.embedded import open_database


class Compaction(BaseModel):
    model_config = ConfigDict(frozen=True)
    quads: int
    bytes_before: int
    bytes_after: int


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def compact(path: Path) -> Compaction:
    """Rewrite the store at `path` into a fresh database and swap it in; the old one is kept
    until the new one is complete, and removed after the swap."""
    path = Path(path)
    fresh, retired = path.with_name(path.name + ".compacting"), path.with_name(path.name + ".old")
    if not path.exists() and (retired / "CURRENT").is_file():
        os.rename(retired, path)  # an earlier compaction stopped between its two renames
    if not (path / "CURRENT").is_file():
        raise InputError(f"no store at {path}")
    old = open_database(path)  # locked while it is copied: no writer changes it meanwhile
    before = folder_bytes(path)
    shutil.rmtree(fresh, ignore_errors=True)  # a half-made copy of an interrupted compaction
    shutil.rmtree(retired, ignore_errors=True)
    try:
        new = Store(str(fresh))
        new.bulk_extend(old.quads_for_pattern(None, None, None, None))
        new.flush()
        quads, copied = len(old), len(new)
    except OSError as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        raise StoreError(f"compaction failed, store unchanged: {exc}") from None
    finally:
        # both closed before any rename: RocksDB writes to a database's folder by its path
        old = new = None
        gc.collect()
    if copied != quads:
        shutil.rmtree(fresh, ignore_errors=True)
        raise StoreError(f"compaction copied {copied} of {quads} quads; store unchanged")
    os.rename(path, retired)
    try:
        os.rename(fresh, path)
    except OSError as exc:
        os.rename(retired, path)
        raise StoreError(f"compaction failed, store unchanged: {exc}") from None
    shutil.rmtree(retired, ignore_errors=True)
    return Compaction(quads=quads, bytes_before=before, bytes_after=folder_bytes(path))
