"""Start-up of the MCP servers: `initialize` does not wait for the heavy loading, a failed load
is an envelope on every call, and mistakes a user can make stop the command at once."""

from __future__ import annotations

import json
import threading

import anyio
from click.testing import CliRunner
from mcp import Client

from kgctl.cli import cli
from kgctl.errors import StoreError
from kgctl.ontology import default_ir
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.server import build_server
from kgctl.store import EmbeddedStore

WAIT_S = 60.0  # generous bound on a busy machine


def test_initialize_answers_while_the_engine_is_still_loading():
    release, loading = threading.Event(), threading.Event()

    def slow_engine() -> QueryEngine:
        loading.set()
        assert release.wait(WAIT_S)
        return QueryEngine(EmbeddedStore(), default_ir())

    server = build_server(slow_engine)

    async def session() -> list[str]:
        async with Client(server, mode="legacy") as client:  # initialize has been answered
            assert client.session.server_info.name == "kgctl-query"
            assert await anyio.to_thread.run_sync(loading.wait, WAIT_S)  # loading has begun
            release.set()
            tools = (await client.list_tools()).tools  # waits for the loading
            listed = await client.call_tool("list_templates", {})
            assert not listed.is_error
            return [t.name for t in tools]

    assert len(anyio.run(session)) == 21


def test_a_failed_load_is_an_envelope_on_every_call():
    def broken() -> QueryEngine:
        raise StoreError("cannot open the store at kg: locked")

    async def session() -> dict:
        async with Client(build_server(broken)) as client:
            assert len((await client.list_tools()).tools) == 21  # the tools are still listed
            result = await client.call_tool("list_templates", {})
            assert result.is_error
            return json.loads(result.content[0].text)

    payload = anyio.run(session)
    assert payload["code"] == "unavailable" and "locked" in payload["message"]
    assert payload["retryable"] is False


def test_user_mistakes_stop_the_serve_commands_with_one_error_line(tmp_path):
    runner = CliRunner()
    cases = [
        ["query", "serve", "--data", str(tmp_path / "missing.trig")],
        ["ground", "--reference", str(tmp_path / "no-reference"), "mcp"],
        ["mcp", "serve"],
    ]
    for args in cases:
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("error:") and "Traceback" not in result.output, args
    wrong = runner.invoke(cli, ["mcp", "serve", "--store", str(tmp_path / "kg"),
                                 "--transport", "streamable-http"])
    assert wrong.exit_code == 2 and "stdio" in wrong.output
