"""Every example in every command's and sub-command's --help runs as written.

The help texts are read through the public door (`kgctl ... --help`, the command tree walked with
click's own listing). Each example runs in a fresh folder that holds small data under the names
the examples use (a store with one MOP-30 paper at `kg` and `kg.db`, an extract run's store and
trace under `kgctl-data/`, a small reference at `ref/`, the bundled `domains/` (also as `gold/`) and
`benchmarks/`, the battery T-Box with its catalog, ...). Only what
cannot run here as written is changed: fixed ports (and URLs naming them) become free ones, a
local model server becomes a fake OpenAI-compatible one. Servers run as subprocesses until they
answer one probe, then are stopped.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import anyio
import click
import pytest
from agent_helpers import NO_CHEMISTRY, FakeLLM, any_tbox_model, free_port, write_pdf
from click.testing import CliRunner
from grounding_helpers import build_small_reference
from mcp import Client, StdioServerParameters

from kgctl.assets import asset_dir
from kgctl.cli import cli

PAPER = "10.1021_ic050460z"
KGCTL = [sys.executable, "-c", "from kgctl.cli import main; main()"]
READY_S = 180.0  # generous: servers start slowly on a busy machine; polled, never slept
POLL_S = 0.05
MIN_EXAMPLES = 40  # a collector that finds fewer is broken
_EXAMPLE = re.compile(r"^Examples?:\s*(.*)$")
_URL_PORT = re.compile(r"(https?://127\.0\.0\.1:)(\d+)")
_ENV = re.compile(r"^[A-Z_]+=")
# sub-command paths that serve until stopped: MCP (stdio, or HTTP with --transport http), SPARQL
MCP_SERVERS = {("mcp", "serve"), ("ground", "mcp"), ("query", "serve"), ("chem", "mcp")}
SPARQL_SERVERS = {("serve",), ("reference", "serve")}
# examples not run here, each with its reason (keep this tiny)
SKIPPED = {"kgctl reference build": "the full reference build writes 617 MB and takes minutes "
                                    "(its --limit form runs here)"}
# what some examples must show besides exiting 0 (the data they name was found)
SHOWS = {"kgctl ground lookup": ("67-56-1", "7447-39-4"), "kgctl store papers": (PAPER,)}
# any triple of the store, in the default graph or a named one
SOME_TRIPLE = "SELECT * WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } } LIMIT 1"


# -- collecting ------------------------------------------------------------------------------
def _command_paths() -> Iterator[tuple[str, ...]]:
    """Every command path of the tree, as click lists it (the root included)."""
    def walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), (*path, name))
    yield from walk(cli, ())


def _help(path: tuple[str, ...]) -> str:
    done = CliRunner().invoke(cli, [*path, "--help"], terminal_width=1000)
    assert done.exit_code == 0, done.output
    return done.output


def examples_in(help_text: str) -> list[str]:
    """`Example: ...` lines and the lines of an `Examples:` block (split at `&&`; a line
    ending in a backslash goes on).

    >>> examples_in("Usage: x\\n\\n  Example: kgctl a && kgctl b\\n\\n"
    ...             "  Examples:\\n    kgctl c \\\\\\n      --d\\n    kgctl e\\n")
    ['kgctl a', 'kgctl b', 'kgctl c --d', 'kgctl e']
    """
    found, block = [], False
    for line in help_text.splitlines():
        text = line.strip()
        match = _EXAMPLE.match(text)
        if found and found[-1].endswith("\\"):
            found[-1] = found[-1][:-1] + text
        elif match:
            block = not match.group(1)
            found.append(match.group(1))
        elif block and text:
            found.append(text)
        else:
            block = False
    return [part.strip() for line in found if line for part in line.split(" && ")]


def collect() -> dict[str, tuple[str, ...]]:
    """Example -> the command path whose help shows it."""
    found: dict[str, tuple[str, ...]] = {}
    for path in _command_paths():
        for example in examples_in(_help(path)):
            found.setdefault(example, path)
    return found


EXAMPLES = collect()
RUN = [e for e in EXAMPLES if e not in SKIPPED]
CASES = [pytest.param(e, marks=pytest.mark.skip(reason=SKIPPED[e])) if e in SKIPPED else e
         for e in EXAMPLES]


def test_every_command_shows_examples_one_per_line():
    assert len(EXAMPLES) >= MIN_EXAMPLES
    assert set(SKIPPED) <= set(EXAMPLES)  # a skip names a real example
    assert len(RUN) == len(EXAMPLES) - len(SKIPPED)
    shown = set(EXAMPLES.values())
    missing = [p for p in _command_paths() if p not in shown]
    assert not missing, f"commands without an example: {missing}"
    assert all(any(e.startswith(start) for e in RUN) for start in SHOWS)
    run_together = [e for e in EXAMPLES if "Example" in e]
    assert not run_together, run_together
    for example in EXAMPLES:
        words = [w for w in shlex.split(example) if not _ENV.match(w)]
        assert words[0] == "kgctl", example


# -- small data under the names the examples use ---------------------------------------------
def _kgctl(args: list[str], *, env: dict[str, str | None]) -> None:
    done = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    assert done.exit_code == 0, (args, done.output)


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM([], default=any_tbox_model, models=("fake-model", "qwen2.5-7b")) as fake:
        yield fake


@pytest.fixture(scope="module")
def template(tmp_path_factory, llm) -> Path:
    """The small data the examples name, made through the public doors (read-only), once for
    all test workers: the first to come makes it while the others wait on the lock."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's folder is in the session's
        shared = shared.parent
    with open(shared / "examples.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tmp = shared / "examples"
        if not (tmp / "made").exists():
            shutil.rmtree(tmp, ignore_errors=True)  # begun by a worker that failed
            tmp.mkdir()
            _make_template(tmp, llm)
            (tmp / "made").touch()
    return tmp


def _make_template(tmp: Path, llm: FakeLLM) -> None:
    shutil.copy(asset_dir("domains") / "nerre-doping" / "benchmark" / "gpt3" /
                "inference_decoded_json.json", tmp / "predictions.json")
    for name in ("domains", "benchmarks"):
        (tmp / name).symlink_to(asset_dir(name), target_is_directory=True)
    (tmp / "gold").symlink_to(asset_dir("domains") / "mop30" / "benchmark",
                              target_is_directory=True)
    battery = Path(__file__).parent / "ontologies" / "battery"
    for entry in battery.iterdir():  # battery.ttl with its catalog and modules, side by side
        (tmp / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    shutil.copy(Path(__file__).parent / "ontologies" / "sosa" / "sosa.ttl", tmp / "sosa.ttl")
    (tmp / "papers").mkdir()
    lines = ["Experimental Section", "Synthesis of MOP-1. Cu(NO3)2 and 5-hydroxyisophthalic "
             "acid were dissolved in DMF and heated at 85 C for 24 h."]
    for pdf in (tmp / "paper.pdf", tmp / "papers" / f"{PAPER}.pdf",
                tmp / "papers" / "station.pdf"):
        write_pdf(pdf, [lines])
    build_small_reference(tmp / "ref")
    env = _environment(tmp, llm)
    trace = asset_dir("domains") / "mop30" / "benchmark" / "traces" / f"{PAPER}.jsonl"
    old = Path.cwd()
    os.chdir(tmp)
    try:
        for store in ("kg", "kg.db"):
            _kgctl(["store", "replay", str(trace), "--store", store], env=env)
        _kgctl(["store", "export", PAPER, "--store", "kg", "--out", "backup.trig"], env=env)
        shutil.copy(tmp / "backup.trig", tmp / "graph.trig")
        shutil.copy(trace, tmp / "ic050460z.jsonl")
        # an extract run: kgctl-data/store and its run trace in kgctl-data/runs
        _kgctl(["extract", f"papers/{PAPER}.pdf", *NO_CHEMISTRY], env=env)
    finally:
        os.chdir(old)
    query = "SELECT ?s ?label WHERE { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?label }"
    for name in ("question.rq", "q.rq"):
        (tmp / name).write_text(query + " LIMIT 5\n", encoding="utf-8")
    for category in ("steps", "chemicals", "characterisation", "cbu"):
        (tmp / "runs" / "out" / category).mkdir(parents=True)
        shutil.copy(asset_dir("domains") / "mop30" / "benchmark" / category / f"{PAPER}.json",
                    tmp / "runs" / "out" / category)
    (tmp / "runs" / "water_stability.csv").write_text(
        "doi,mof,label\n10.1038/s41586-019-1798-7,Al-PMOF,Stable\n", encoding="utf-8")


def _environment(folder: Path, llm: FakeLLM) -> dict[str, str | None]:
    return {"KGCTL_REFERENCE": str(folder / "ref"), "KGCTL_CACHE": str(folder / "cache"),
            "KGCTL_STORE": None, "KGCTL_ENDPOINT": None, "KGCTL_MODEL": "fake-model",
            "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "test",
            "HOME": str(folder / "home")}


# -- servers ---------------------------------------------------------------------------------
@contextmanager
def _process(argv: list[str], *, cwd: Path, env: dict[str, str | None]
             ) -> Iterator[tuple[subprocess.Popen, IO[bytes]]]:
    """A kgctl subprocess writing into a file (never an unread pipe), stopped afterwards."""
    full = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([*KGCTL, *argv], cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            yield process, log
        finally:
            process.terminate()
            try:
                process.wait(timeout=READY_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _printed_url(process: subprocess.Popen, log: IO[bytes], port: int) -> str:
    """The endpoint URL the server prints once it listens on `port`."""
    pattern = re.compile(rf"(http://127\.0\.0\.1:{port}/\S*)")
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        log.seek(0)
        printed = log.read().decode(errors="replace")
        assert process.poll() is None, f"server exited with {process.returncode}: {printed}"
        match = pattern.search(printed)
        if match:
            return match.group(1)
        time.sleep(POLL_S)
    raise AssertionError(f"no endpoint printed within {READY_S} s")


def _accepting(process: subprocess.Popen, port: int) -> None:
    """Wait until `port` accepts connections (a server may print its URL just before)."""
    deadline = time.monotonic() + READY_S
    while True:
        assert process.poll() is None, f"server exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=READY_S).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"port {port} not accepting within {READY_S} s"
            time.sleep(POLL_S)


def _serves_data(url: str) -> None:
    """The endpoint answers with a triple of its store."""
    query = url.rstrip("/") + ("" if url.rstrip("/").endswith("query") else "/query")
    request = urllib.request.Request(query + "?" + urllib.parse.urlencode({"query": SOME_TRIPLE}),
                                     headers={"Accept": "application/sparql-results+json"})
    with urllib.request.urlopen(request, timeout=READY_S) as answer:
        assert json.load(answer)["results"]["bindings"], f"{url} serves an empty store"


async def _mcp_tools(target: str | StdioServerParameters) -> list[str]:
    async with Client(target) as client:
        return [t.name for t in (await client.list_tools()).tools]


def _with_port(argv: list[str], port: int) -> list[str]:
    if "--port" in argv:
        i = argv.index("--port")
        return [*argv[:i + 1], str(port), *argv[i + 2:]]
    return [*argv, "--port", str(port)]  # the default port may be taken on a shared machine


def _serve(path: tuple[str, ...], argv: list[str], folder: Path, env: dict) -> None:
    if path in MCP_SERVERS and "http" not in argv:  # MCP over stdio
        full = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
        params = StdioServerParameters(command=KGCTL[0], args=[*KGCTL[1:], *argv], env=full,
                                       cwd=str(folder))
        assert anyio.run(_mcp_tools, params)
        return
    port = free_port()
    with _process(_with_port(argv, port), cwd=folder, env=env) as (process, log):
        url = _printed_url(process, log, port)
        _accepting(process, port)
        if path in MCP_SERVERS:
            assert anyio.run(_mcp_tools, url)
        else:
            _serves_data(url)


@pytest.fixture(scope="module")
def endpoint(template, llm) -> Iterator[str]:
    """The SPARQL endpoint that examples with `--endpoint http://127.0.0.1:PORT/...` reach."""
    port = free_port()
    argv = ["reference", "serve", "--store", str(template / "ref"), "--port", str(port)]
    with _process(argv, cwd=template, env=_environment(template, llm)) as (process, log):
        url = _printed_url(process, log, port)
        _accepting(process, port)
        _serves_data(url)
        yield str(port)


# -- running ---------------------------------------------------------------------------------
def _command_path(argv: list[str]) -> tuple[str, ...]:
    path: list[str] = []
    command: click.Command = cli
    for word in argv:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            if word in command.list_commands(ctx):
                command = command.get_command(ctx, word)
                path.append(word)
    return tuple(path)


@pytest.mark.parametrize("example", CASES)
def test_help_example_runs(example, template, endpoint, llm, tmp_path, monkeypatch):
    words = shlex.split(_URL_PORT.sub(lambda m: m.group(1) + endpoint, example))
    # a copy of the small data (9 MB, milliseconds): no example sees another's writes
    folder = Path(shutil.copytree(template, tmp_path / "work", symlinks=True))
    env = _environment(folder, llm)
    for word in words[:words.index("kgctl")]:  # VAR=value before the command
        name, _, value = word.partition("=")
        env[name] = llm.base_url if name == "OPENAI_BASE_URL" else value
    argv = words[words.index("kgctl") + 1:]
    path = _command_path(argv)
    if (path[0] == "chem" or "--structures" in argv) and shutil.which("java") is None:
        pytest.skip("Java is not installed (OPSIN needs it)")
    if path in MCP_SERVERS or path in SPARQL_SERVERS:
        _serve(path, argv, folder, env)
        return
    monkeypatch.chdir(folder)
    done = CliRunner().invoke(cli, argv, env=env)
    assert done.exception is None or isinstance(done.exception, SystemExit), (
        example, done.output[-3000:])
    assert "Traceback" not in done.output
    assert done.exit_code == 0, (example, done.output[-3000:])
    for start, texts in SHOWS.items():
        if example.startswith(start):
            assert all(t in done.output for t in texts), (example, done.output[-3000:])
