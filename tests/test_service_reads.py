"""The serving process's `Reads` in process, over fake workers, checkpoints and app: which
requests it takes from uvicorn's cycle, and where each one it takes is answered."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from kgctl.service.asgi import Head
from kgctl.service.config import ServiceConfig
from kgctl.service.server import Reads

TIMEOUT_S = 0.05
FORM = "application/x-www-form-urlencoded"


class Workers:
    def __init__(self) -> None:
        self.jobs: list[tuple[str, bytes, int]] = []

    def submit(self, head, body, generation, deadline, answered) -> None:
        self.jobs.append((head.path, body, generation))
        answered((200, [], b"from a worker"))


class Checkpoints:
    """Writes made and the writes the newest view holds; `publish` brings it up to date."""

    def __init__(self, written: int, published: int) -> None:
        self.written, self.published = written, published
        self.ready = asyncio.Event()

    async def fresh(self) -> int:
        await self.ready.wait()
        return self.published

    def publish(self) -> None:
        self.published = self.written
        self.ready.set()


class Local:
    """The serving process's app: records what it answered (204)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope, receive, send) -> None:
        self.bodies.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def reads(written: int = 0, published: int = 0, *, timeout_s: float = TIMEOUT_S
          ) -> tuple[Reads, Workers, Checkpoints, Local]:
    workers, checkpoints, local = Workers(), Checkpoints(written, published), Local()
    return (Reads(local, workers, checkpoints, ServiceConfig(timeout_s=timeout_s)), workers,
            checkpoints, local)


def head(method: str, path: str, content_type: str | None = None) -> Head:
    headers = [(b"content-type", content_type.encode())] if content_type else []
    return Head(method, path, path.encode(), b"", headers, "1.1", "http", None, None, "")


@pytest.mark.parametrize(("method", "path", "content_type", "taken"), [
    ("GET", "/query", None, True),
    ("POST", "/query", "application/sparql-query", True),
    ("GET", "/sparql", None, True),
    ("POST", "/sparql", FORM, True),  # its body may hold a query or an update
    ("POST", "/sparql", "application/sparql-query", True),
    ("POST", "/sparql", "application/sparql-update", False),
    ("POST", "/update", FORM, False),
    ("GET", "/store", None, True),
    ("PUT", "/store", "text/turtle", False),
    ("DELETE", "/store", None, False),
    ("GET", "/healthz", None, False),
    ("GET", "/papers", None, True),
    # the page's own files read no store: a page loads while every worker is busy
    ("GET", "/", None, False),
    ("GET", "/static/app.js", None, False),
    ("GET", "/examples.json", None, False),
    ("GET", "/prefixes", None, False),
])
def test_reads_take_what_cannot_change_the_store(method: str, path: str,
                                                 content_type: str | None, taken: bool) -> None:
    assert reads()[0].takes(method, path, content_type) is taken


def run(scenario) -> list:
    """The replies `scenario(answered)` leads to."""
    replies: list = []

    async def main() -> None:
        await scenario(replies.append)
        async with asyncio.timeout(10):
            while not replies:
                await asyncio.sleep(0.001)
    uvloop.run(main())
    return replies


def test_a_read_goes_to_a_worker_with_the_newest_view() -> None:
    served, workers, _, local = reads(written=3, published=3)

    async def scenario(answered) -> None:
        served.submit(head("GET", "/query"), b"", answered)
    assert run(scenario) == [(200, [], b"from a worker")]
    assert workers.jobs == [("/query", b"", 3)] and local.bodies == []


def test_a_form_holding_an_update_is_answered_by_the_local_app() -> None:
    served, workers, _, local = reads()
    body = b"update=INSERT+DATA+%7B%7D"

    async def scenario(answered) -> None:
        served.submit(head("POST", "/sparql", FORM), body, answered)
    assert run(scenario) == [(204, [], b"")]
    assert local.bodies == [body] and workers.jobs == []


def test_a_read_waits_for_the_view_holding_the_writes_made_before_it() -> None:
    # a limit no busy machine reaches: the read must wait for the view, not time out
    served, workers, checkpoints, _ = reads(written=2, published=1, timeout_s=60)

    async def scenario(answered) -> None:
        served.submit(head("GET", "/query"), b"", answered)
        for _ in range(10):  # let the read reach its wait
            await asyncio.sleep(0)
        assert workers.jobs == []  # not on the older view
        checkpoints.publish()
    assert run(scenario) == [(200, [], b"from a worker")]
    assert workers.jobs == [("/query", b"", 2)]


def test_a_read_whose_view_does_not_come_in_time_is_answered_503() -> None:
    served, workers, _, _ = reads(written=2, published=1)

    async def scenario(answered) -> None:
        served.submit(head("GET", "/query"), b"", answered)
    [(status, _, body)] = run(scenario)
    assert status == 503 and b"timed out" in body and workers.jobs == []
