"""Per-session state of an MCP server, with idle expiry and a cap on how many sessions it holds.

A session is the transport's session (streamable HTTP with the initialize handshake: its
`Mcp-Session-Id`), else the connection of a handshake client (stdio, in memory). Requests of
the stateless protocol carry no session: on a server with one peer (stdio, in process) they
all belong to that peer; on a shared HTTP server they have none, and get a fresh state.

>>> now = [0.0]
>>> states = SessionStates(dict, max_idle_seconds=60, max_sessions=2, clock=lambda: now[0])
>>> states.get("a")["paper"] = "p1"
>>> states.get("a"), states.get(None), len(states)
({'paper': 'p1'}, {}, 1)
>>> now[0] = 61.0
>>> states.get("a"), len(states)
({}, 1)
>>> _ = states.get("b"), states.get("c"); len(states), "a" in states
(2, False)
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kgctl.toolserver.admission import MAX_SESSIONS

StateT = TypeVar("StateT")

SESSION_IDLE_SECONDS = 30 * 60.0  # the SDK's idle timeout of HTTP sessions, kept in step
LOCAL = "local"  # the one peer of a stdio or in-process server


class SessionStates(Generic[StateT]):
    """State objects keyed by session; the least recently used go first when full."""

    def __init__(self, factory: Callable[[], StateT], *,
                 max_idle_seconds: float = SESSION_IDLE_SECONDS, max_sessions: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.factory, self.max_idle, self.max_sessions = factory, max_idle_seconds, max_sessions
        self._clock = clock
        self._states: OrderedDict[str, tuple[StateT, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str | None) -> StateT:
        """The state of session `key` (created when new or expired); None: a throwaway one."""
        if key is None:
            return self.factory()
        with self._lock:
            now = self._clock()
            while self._states:  # the oldest first: stop at the first one still fresh
                oldest, (_, touched) = next(iter(self._states.items()))
                if now - touched <= self.max_idle:
                    break
                del self._states[oldest]
            state = self._states.pop(key, (None, 0.0))[0]
            state = self.factory() if state is None else state
            self._states[key] = (state, now)
            while len(self._states) > self.max_sessions:
                self._states.popitem(last=False)
            return state

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, key: str) -> bool:
        return key in self._states


class SessionKeys:
    """Text keys for MCP sessions, without keeping connections alive."""

    def __init__(self) -> None:
        self.shared = False  # set when served over HTTP: stateless requests have no session
        self._keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def of(self, connection: Any) -> str | None:
        """The session key of an SDK connection (`ctx.session._connection`)."""
        if getattr(connection, "session_id", None):
            return "http:" + connection.session_id
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None if self.shared else LOCAL
        with self._lock:
            if connection not in self._keys:
                self._keys[connection] = f"conn:{next(self._counter)}"
            return self._keys[connection]
