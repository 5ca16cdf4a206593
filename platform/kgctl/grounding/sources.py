"""Where reference data is read from: a SPARQL endpoint over HTTP or an embedded store.

Both run the same SELECT text and return rows of lexical values, so both give the same index.
"""

from __future__ import annotations

import json
import urllib.error
from pathlib import Path
from typing import Protocol

from pyoxigraph import QuerySolutions, Store
from SPARQLWrapper import JSON, POST, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import SPARQLWrapperException

from kgctl.errors import InputError, StoreError
from kgctl.store.endpoint import CAP_HEADER, RowCapError

DEFAULT_TIMEOUT_S = 120
Rows = list[tuple[str | None, ...]]


class SparqlSource(Protocol):
    name: str  # identifies the source in cache keys

    def select(self, query: str) -> Rows: ...

    def ask(self, query: str) -> bool: ...


class EndpointSource:
    """A SPARQL 1.1 endpoint via SPARQLWrapper (tested: the Oxigraph server, Virtuoso 7)."""

    def __init__(self, url: str, *, timeout: int = DEFAULT_TIMEOUT_S) -> None:
        if not url.startswith(("http://", "https://")):
            raise InputError(f"endpoint must be an http(s) URL, got {url!r}")
        self.name = url
        self.url = url
        self.timeout = timeout

    def _run(self, query: str) -> dict:
        client = SPARQLWrapper(self.url)
        client.setMethod(POST)
        client.setReturnFormat(JSON)
        client.setTimeout(self.timeout)
        client.setQuery(query)
        try:
            response = client.query().response
            cap = response.headers.get(CAP_HEADER)
            if cap is not None and cap.strip().isdigit():  # Virtuoso's ResultSetMaxRows
                raise RowCapError(self.url, int(cap))
            return json.loads(response.read())
        except SPARQLWrapperException as exc:
            raise StoreError(f"endpoint {self.url} refused the query: {_first_line(exc)}") from exc
        except urllib.error.HTTPError as exc:
            raise StoreError(f"endpoint {self.url} answered HTTP {exc.code}") from exc
        except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise StoreError(f"endpoint {self.url} unreachable: {reason}") from exc
        except json.JSONDecodeError as exc:
            raise StoreError(f"endpoint {self.url} did not return SPARQL JSON") from exc

    def select(self, query: str) -> Rows:
        data = self._run(query)
        names = data["head"]["vars"]
        return [tuple(b[n]["value"] if n in b else None for n in names)
                for b in data["results"]["bindings"]]

    def ask(self, query: str) -> bool:
        return bool(self._run(query)["boolean"])


class EmbeddedSource:
    """A pyoxigraph store directory, opened read-only (a server may hold it too); queries see
    all its graphs (the tables' default graph and the minted entities' graph)."""

    def __init__(self, path: Path | str) -> None:
        path = Path(path)
        if not path.is_dir():
            raise InputError(f"no reference store at {path}; run `kgctl reference build`")
        self.name = f"store:{path.resolve()}"
        try:
            self.store = Store.read_only(str(path))
        except OSError as exc:
            raise StoreError(f"cannot open the reference store {path}: {exc}") from exc

    def select(self, query: str) -> Rows:
        try:
            result = self.store.query(query, use_default_graph_as_union=True)
        except SyntaxError as exc:
            raise StoreError(f"query refused: {exc}") from exc
        if not isinstance(result, QuerySolutions):
            raise StoreError("expected a SELECT query")
        names = [v.value for v in result.variables]
        return [tuple(None if s[n] is None else s[n].value for n in names) for s in result]

    def ask(self, query: str) -> bool:
        return bool(self.store.query(query, use_default_graph_as_union=True))


def open_source(*, endpoint: str | None = None, store: Path | str | None = None) -> SparqlSource:
    if (endpoint is None) == (store is None):
        raise InputError("give a SPARQL endpoint URL or a reference store path (exactly one)")
    return EndpointSource(endpoint) if endpoint is not None else EmbeddedSource(store)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
