"""A small loopback HTTP proxy in front of a SPARQL server for fault tests: it can drop every
n-th successful answer after the server has acted on the request (the client sees the
connection close), and run a hook before or after forwarding (e.g. kill the server); a hook
that returns True drops the request (before) or its answer (after)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_HEADERS = {"host", "connection", "content-length", "transfer-encoding", "keep-alive",
               "content-encoding", "accept-encoding"}
Hook = Callable[[bytes], bool]


class _Relay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._relay()

    def do_POST(self) -> None:
        self._relay()

    def _relay(self) -> None:
        proxy: Proxy = self.server.proxy  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        if proxy.before(body):
            self.close_connection = True
            return
        try:
            answer = proxy.client.request(self.command, proxy.upstream + self.path,
                                          content=body, headers=headers)
        except httpx.HTTPError:
            self.close_connection = True
            return
        if proxy.after(body) or proxy.drop(answer.status_code, body):
            self.close_connection = True  # the server acted; its answer is lost
            return
        self.send_response(answer.status_code)
        for key, value in answer.headers.items():
            if key.lower() not in HOP_HEADERS:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)


class Proxy:
    """Forwards http://127.0.0.1:<port>/... to `upstream` (scheme://host:port)."""

    def __init__(self, upstream: str, *, drop_every: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.drop_every = drop_every
        self.answers = 0
        self.dropped = 0
        self.dropped_updates = 0
        self.before: Hook = lambda body: False
        self.after: Hook = lambda body: False
        self.client = httpx.Client(timeout=120)
        self._count = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Relay)
        self._server.proxy = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def drop(self, status: int, body: bytes) -> bool:
        if status >= 300 or not self.drop_every:  # auth challenges and errors pass
            return False
        with self._count:
            self.answers += 1
            if self.answers % self.drop_every:
                return False
            self.dropped += 1
            self.dropped_updates += not body.startswith(b"query=")
            return True

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.client.close()
