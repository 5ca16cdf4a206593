"""Profile section `tool_servers:`: external, read-only MCP servers whose tools plan steps offer.

A T-Box's profile may bind tools of another server (e.g. chemistry) to the plan steps that
write some of its classes; the binding is data, so nothing in the compiler or the agent knows
the domain. The names are checked against the loaded T-Boxes, like every other profile rule.

>>> import tempfile, pathlib
>>> from kgctl.ontology.profile import read_profile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "x.profile.yaml"
>>> _ = path.write_text('''tool_servers:
...   calc:
...     command: calc-server --stdio
...     probe: {tool: add, arguments: {a: 1, b: 2}}
...     offer:
...       - {classes: [ex:Sum], tools: [add], tokens: 90, prompt: Add with add.}
... ''')
>>> server = read_profile(path, {"ex": "http://example.org/"}).tool_servers[0]
>>> server.command, server.probe, server.probe_arguments
(('calc-server', '--stdio'), 'add', {'a': 1, 'b': 2})
>>> offer = server.offers[0]
>>> offer.classes, offer.tools, offer.tokens, str(offer.source)
(('http://example.org/Sum',), ('add',), 90, 'x.profile.yaml:6')
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from kgctl.errors import OntologyError
from kgctl.ontology.ir import ToolOffer, ToolServerInfo

if TYPE_CHECKING:
    from kgctl.ontology.profile import Profile, _Reader

SERVER_KEYS = ("command", "probe", "offer")
PROBE_KEYS = ("tool", "arguments")
OFFER_KEYS = ("classes", "tools", "tokens", "prompt")


def read_tool_servers(reader: _Reader, node: yaml.Node | None) -> tuple[ToolServerInfo, ...]:
    """The `tool_servers:` mapping of a profile (server name -> command, probe, offers)."""
    if node is None:
        return ()
    servers = []
    for name, body in reader.mapping(node, None, "tool_servers").items():
        spec = reader.mapping(body, SERVER_KEYS, f"tool server {reader.scalar(name)}")
        for required in ("command", "offer"):
            if required not in spec:
                raise reader.error(body, f"a tool server needs {required!r}")
        probe, arguments = None, {}
        if "probe" in spec:
            call = reader.mapping(spec["probe"], PROBE_KEYS, "probe")
            if "tool" not in call:
                raise reader.error(spec["probe"], "a probe needs 'tool'")
            probe = reader.scalar(call["tool"])
            arguments = _plain(reader, call["arguments"]) if "arguments" in call else {}
            if not isinstance(arguments, dict):
                raise reader.error(call["arguments"], "probe arguments must be a mapping")
        servers.append(ToolServerInfo(
            name=reader.scalar(name), command=_command(reader, spec["command"]), probe=probe,
            probe_arguments=arguments,
            offers=tuple(_offer(reader, n) for n in reader.sequence(spec["offer"])),
            source=reader.source(name)))
    return tuple(servers)


def check_tool_servers(profiles: Sequence[Profile], classes: Mapping[str, Any],
                       curie: Callable[[str], str]) -> tuple[ToolServerInfo, ...]:
    """The tool servers of all profiles: classes must exist, a server and a tool are bound once."""
    servers: dict[str, ToolServerInfo] = {}
    tools: dict[str, str] = {}
    for server in (s for p in profiles for s in p.tool_servers):
        if server.name in servers:
            raise OntologyError(f"{server.source}: tool server {server.name!r} is already "
                                f"declared at {servers[server.name].source}")
        servers[server.name] = server
        for offer in server.offers:
            for cls in offer.classes:
                if cls not in classes:
                    raise OntologyError(f"{offer.source}: unknown class {curie(cls)}")
            for tool in offer.tools:
                if tools.setdefault(tool, server.name) != server.name:
                    raise OntologyError(f"{offer.source}: tool {tool!r} is already offered by "
                                        f"tool server {tools[tool]!r}")
    return tuple(servers.values())


def _offer(reader: _Reader, node: yaml.Node) -> ToolOffer:
    body = reader.mapping(node, OFFER_KEYS, "offer")
    for required in OFFER_KEYS:
        if required not in body:
            raise reader.error(node, f"an offer needs {required!r}")
    classes = tuple(reader.iri(n) for n in reader.sequence(body["classes"]))
    tools = tuple(reader.scalar(n) for n in reader.sequence(body["tools"]))
    if not classes or not tools:
        raise reader.error(node, "an offer needs at least one class and one tool")
    tokens = reader.integer(body["tokens"])
    if tokens < 0:
        raise reader.error(body["tokens"], "tokens cannot be negative")
    return ToolOffer(classes=classes, tools=tools, tokens=tokens,
                     prompt=reader.text(body["prompt"]), source=reader.source(node))


def _command(reader: _Reader, node: yaml.Node) -> tuple[str, ...]:
    """A command line, written as one string or as a list of words."""
    if isinstance(node, yaml.SequenceNode):
        words = [reader.scalar(n) for n in node.value]
    else:
        try:
            words = shlex.split(reader.scalar(node))
        except ValueError as exc:
            raise reader.error(node, f"not a command line ({exc})") from None
    if not words:
        raise reader.error(node, "the command is empty")
    return tuple(words)


def _plain(reader: _Reader, node: yaml.Node) -> Any:
    try:
        return SafeConstructor().construct_object(node, deep=True)
    except ConstructorError as exc:
        raise reader.error(node, f"not plain YAML data ({exc.problem})") from None
