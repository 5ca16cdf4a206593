"""Answer only requests whose ``Host`` header names this server (DNS-rebinding guard).

>>> host_name("[::1]:7878"), host_name("Example.org:80"), host_name("localhost")
('::1', 'example.org', 'localhost')
"""

from __future__ import annotations

from collections.abc import Collection

from kgctl.service.asgi import Reply, refusal, send_reply

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
HTTP_BAD_REQUEST = 400
ANY = "*"


def host_name(header: str) -> str:
    """The host part of a Host header, lower-cased, without port or IPv6 brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def request_url(scope) -> str:
    """The URL an HTTP request went to, without its query (as the client wrote its path)."""
    host = next((v for k, v in scope["headers"] if k == b"host"), b"localhost")
    path = scope.get("raw_path", b"").decode("latin-1") or scope["path"]
    return f"{scope['scheme']}://{host.decode('latin-1')}{path}"


class HostGuard:
    """ASGI middleware: 400 for a Host header outside `allowed` (``*`` allows any)."""

    def __init__(self, app, *, allowed: Collection[str]) -> None:
        self.app = app
        self.allowed = frozenset(a.lower() for a in allowed)

    async def __call__(self, scope, receive, send) -> None:
        refused = self.refusal(scope) if scope["type"] == "http" else None
        if refused is not None:
            return await send_reply(send, refused)
        await self.app(scope, receive, send)

    def refusal(self, scope) -> Reply | None:
        """The answer to an HTTP request this server does not answer for, else None."""
        header, *more = [v for k, v in scope["headers"] if k == b"host"] or [None]
        if more or header is None and scope["http_version"] == "1.1":  # RFC 9112
            return refusal(HTTP_BAD_REQUEST, "one Host header is needed (HTTP/1.0: at most one)")
        if ANY not in self.allowed \
                and host_name((header or b"").decode("latin-1")) not in self.allowed:
            return refusal(HTTP_BAD_REQUEST, "this server does not answer for that Host header "
                           "(start it with --allowed-host NAME)")
        return None
