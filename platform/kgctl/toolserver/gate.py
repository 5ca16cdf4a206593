"""`SessionGate`: the ASGI layer in front of the SDK's streamable-HTTP app that applies
`admission.SessionPolicy` (who may open a session, which idle one is evicted first).

It watches the traffic (a request without `Mcp-Session-Id` opens a session; the answer names
it; a 404 means the transport has forgotten it) and evicts a session the way a client ends one:
an HTTP DELETE with its id, sent to the app in process.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from kgctl.toolserver.admission import SessionPolicy

CLIENT_ID_HEADER = "mcp-client-id"
_SESSION = MCP_SESSION_ID_HEADER.lower().encode()
_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
_CLIENT = CLIENT_ID_HEADER.encode()
_MAX_CLIENT_ID = 200
_REFUSED = (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Too many open '
            b'sessions: every session of this client (or of the server) is busy"}}')


def client_of(scope: dict[str, Any]) -> str:
    """The client a request comes from: its address, plus the `Mcp-Client-Id` it sends."""
    address = (scope.get("client") or ("?", 0))[0]
    named = dict(scope["headers"]).get(_CLIENT, b"")[:_MAX_CLIENT_ID]
    return f"{address} {named.decode('latin-1')}" if named else address


class SessionGate:
    """Wraps the SDK's app: sessions are admitted, tracked and evicted by `policy`."""

    def __init__(self, app: Any, policy: SessionPolicy, path: str, host: str) -> None:
        """`host`: the server's own `host:port`, the Host of the evicting DELETEs."""
        self.app, self.policy, self.path = app, policy, path
        self._host = host.encode("latin-1")
        self._lock = anyio.Lock()
        self._tickets = itertools.count(1)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        session = headers.get(_SESSION, b"").decode("latin-1")
        version = headers.get(_VERSION, b"").decode("latin-1")
        if version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await self.app(scope, receive, send)  # the stateless protocol: no session
        if session:
            return await self._existing(session, scope, receive, send)
        if scope["method"] != "POST":
            return await self.app(scope, receive, send)
        ticket = f"ticket:{next(self._tickets)}"
        async with self._lock:
            decision = self.policy.admit(client_of(scope), ticket)
            for victim in decision.evict:
                await self._delete(victim)
        if not decision.admitted:
            await _respond(send, 503, _REFUSED)
            return
        opened: list[str] = []

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened.extend(v.decode("latin-1") for k, v in message.get("headers", ())
                              if k.lower() == _SESSION)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self.policy.opened(ticket, opened[0] if opened else None)

    async def _existing(self, session: str, scope: dict[str, Any], receive: Any,
                        send: Any) -> None:
        post = scope["method"] == "POST"
        if post:
            self.policy.begin(session)
        else:
            self.policy.touch(session)
        status: list[int] = []

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if post:
                self.policy.end(session)
            else:
                self.policy.touch(session)
            gone = status and (status[0] == 404 or scope["method"] == "DELETE" and status[0] < 300)
            if gone:
                self.policy.closed(session)

    async def _delete(self, session: str) -> None:
        """End `session` in the transport, as its client's DELETE would."""
        request = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                   "method": "DELETE", "scheme": "http", "path": self.path,
                   "raw_path": self.path.encode(), "root_path": "", "query_string": b"",
                   "client": ("127.0.0.1", 0), "server": None,
                   "headers": [(b"host", self._host), (_SESSION, session.encode("latin-1"))]}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: dict[str, Any]) -> None:
            pass

        await self.app(request, receive, discard)


async def _respond(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
