"""Tools of external MCP servers that plan steps offer beside the graph tools (e.g. chemistry).

The plan names each server and how to start it (its profile's `command`, run over stdio); a
URL given for a name (`--tool-server NAME=URL`, streamable HTTP) is used instead, and `off`
leaves the server out. Each server is reached once per run and probed (the profile's probe
call); one that cannot be reached or whose probe fails is left out with one line saying why,
and the steps run without its tools. The tools are read-only: their calls are recorded in the
trace but write nothing and are never replayed.

>>> launch(("kgctl", "chem", "mcp"))[1:]
['-c', 'from kgctl.cli import main; main()', 'chem', 'mcp']
>>> launch(("calc-server", "--stdio"))
['calc-server', '--stdio']
>>> why_refused('{"status": "rejected", "code": "unavailable", "message": "Java is missing"}')
'Java is missing'
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgctl.compiler.plan import Plan, PlanStep
from kgctl.errors import InputError
from kgctl.ontology.ir import ToolServerInfo

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import Tool

OFF = "off"  # `--tool-server NAME=off`: run without that server
KGCTL = "kgctl"  # a command naming kgctl runs this installation's kgctl
REQUEST_TIMEOUT_S = 120.0  # a server that answers nothing for this long is down (a JVM
# starting on a busy machine takes up to a minute)
MAX_REASON_CHARS = 300


@dataclass
class ToolServers:
    """The external servers of one run: their sessions, tools and the ones left out."""

    sessions: dict[str, Client] = field(default_factory=dict)  # server -> session
    listing: dict[str, Tool] = field(default_factory=dict)  # tool -> its listing entry
    server_of: dict[str, str] = field(default_factory=dict)  # tool -> server
    unavailable: dict[str, str] = field(default_factory=dict)  # server -> why

    def offered(self, step: PlanStep) -> list[str]:
        """The step's external tools this run can call."""
        return [name for e in step.external if e.server in self.sessions for name in e.tools]


def check_overrides(servers: Sequence[ToolServerInfo], urls: Mapping[str, str]) -> None:
    """A `--tool-server` name must be one of the servers (of an IR or a plan)."""
    known = sorted(s.name for s in servers)
    for name in urls:
        if name not in known:
            raise InputError(f"--tool-server {name}: the ontology's profiles name no such tool "
                             f"server (known: {', '.join(known) or 'none'})")


@asynccontextmanager
async def tool_servers(plan: Plan, *, urls: Mapping[str, str] | None = None
                       ) -> AsyncIterator[ToolServers]:
    """Reach and probe every server the plan's steps use; closed on exit."""
    urls = urls or {}
    check_overrides(plan.tool_servers, urls)
    used = {e.server for step in plan.steps for e in step.external}
    found = ToolServers()
    async with AsyncExitStack() as stack:
        for info in plan.tool_servers:
            if info.name not in used:
                continue
            if urls.get(info.name) == OFF:
                found.unavailable[info.name] = f"switched off (--tool-server {info.name}={OFF})"
                continue
            errlog = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
            inner = AsyncExitStack()
            try:
                client = await inner.enter_async_context(_client(info, urls.get(info.name),
                                                                  errlog))
                tools = {t.name: t for t in (await client.list_tools()).tools}
                missing = [n for o in info.offers for n in o.tools if n not in tools]
                if missing:
                    raise _ProbeFailed(f"it offers no tool {', '.join(missing)}")
                await _probe(client, info)
            except Exception as exc:  # the server is left out, the run goes on
                await _close_quietly(inner)
                found.unavailable[info.name] = _reason(exc, errlog)
                continue
            stack.push_async_callback(inner.aclose)
            found.sessions[info.name] = client
            for name in (n for offer in info.offers for n in offer.tools):
                found.listing[name], found.server_of[name] = tools[name], info.name
        yield found


class _ProbeFailed(Exception):
    pass


def _client(info: ToolServerInfo, url: str | None, errlog: Any) -> Client:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    if url:
        return Client(url, read_timeout_seconds=REQUEST_TIMEOUT_S)
    command = launch(info.command)
    # the whole environment (the SDK passes only a few variables): a server of this run may
    # need what kgctl does (PYTHONPATH, KGCTL_*, JAVA_HOME)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    return Client(stdio_client(params, errlog=errlog), read_timeout_seconds=REQUEST_TIMEOUT_S)


async def _probe(client: Client, info: ToolServerInfo) -> None:
    from mcp_types import TextContent

    if info.probe is None:
        return
    result = await client.call_tool(info.probe, dict(info.probe_arguments))
    if result.is_error:
        text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
        raise _ProbeFailed(why_refused(text))


async def _close_quietly(stack: AsyncExitStack) -> None:
    try:
        await stack.aclose()
    except Exception:  # a server that failed to start may fail to close as well
        pass


def _reason(exc: BaseException, errlog: Any) -> str:
    """Why a server is left out: the probe's refusal, else the server's last stderr line, else
    the connection error."""
    if isinstance(exc, _ProbeFailed):
        return str(exc)
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = lines[-1] if lines else (str(exc) or type(exc).__name__)
    return text.removeprefix("error: ")[:MAX_REASON_CHARS]


# Pure functions


def launch(command: tuple[str, ...]) -> list[str]:
    """The command line to start: `kgctl ...` runs the kgctl of this interpreter, not whichever
    one the PATH finds first."""
    if command[0] == KGCTL:
        return [sys.executable, "-c", "from kgctl.cli import main; main()", *command[1:]]
    return list(command)


def why_refused(text: str) -> str:
    """The message of a refusal (a feedback envelope or plain text), on one line."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    message = data.get("message") if isinstance(data, dict) else None
    return " ".join(str(message or text or "the probe call was refused").split()
                    )[:MAX_REASON_CHARS]
