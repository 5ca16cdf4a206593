"""External tool servers in the agent (`kgctl extract` through the CLI, a scripted LLM server and
real MCP transports): a profile binds another server's read-only tools to the plan steps that
create some of its classes; the agent offers them there, routes the calls to that server,
records them without replaying them, and runs without them (saying so once) when the server is
not available. The chemistry server's binding (building units for the OntoMOPs CBU step) is
tested end to end where the chemistry part is installed."""

from __future__ import annotations

import json
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
from agent_helpers import FakeLLM, Reply, tool_messages
from click.testing import CliRunner
from mcp_helpers import http_server

from kgctl.agent.trace import AgentTrace
from kgctl.cli import cli
from kgctl.compiler.plan import compile_plan
from kgctl.errors import OntologyError
from kgctl.ontology import load_ir
from kgctl.store import EmbeddedStore, canonical_nquads

DATA = Path(__file__).parent / "data"
DOPING = DATA / "ontology" / "doping.ttl"
SYMBOL_SERVER = DATA / "agent" / "symbol_server.py"
PAPER = "Experimental Section\n\nThe film was doped with erbium (2 %) by sputtering.\n"
CBU_QUERY = ("SELECT ?f WHERE { ?c <https://www.theworldavatar.com/kg/ontomops/hasCBUFormula> "
             "?f }")


def _profile(tmp_path: Path, *, refuse: bool = False, cls: str = "dop:Dopant") -> Path:
    command = [sys.executable, str(SYMBOL_SERVER), *(["--refuse"] if refuse else [])]
    path = tmp_path / "doping.profile.yaml"
    path.write_text(
        "tool_servers:\n"
        "  symbols:\n"
        f"    command: {json.dumps(command)}\n"
        "    probe: {tool: element_symbol, arguments: {name: titanium}}\n"
        "    offer:\n"
        f"      - classes: [{cls}]\n"
        "        tools: [element_symbol]\n"
        "        tokens: 120\n"
        "        prompt: A dopant's formula is its element symbol; element_symbol gives it.\n",
        encoding="utf-8")
    return path


def _offered(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def _symbol_then_dopant(request: dict) -> Reply:
    """Ask the external tool first, then write the dopant with what it returned."""
    results = tool_messages(request)
    if "element_symbol" in _offered(request) and not results:
        return Reply(tool_calls=[("element_symbol", '{"name": "erbium"}')])
    if results and "symbol" in results[-1]["content"]:
        symbol = json.loads(results[-1]["content"])["symbol"]
        return Reply(tool_calls=[("create_dopant", json.dumps(
            {"label": "erbium", "formula": [symbol]}))])
    if "create_dopant" in _offered(request) and not results:  # the server is not available
        return Reply(tool_calls=[("create_dopant", '{"label": "erbium"}')])
    return Reply(content="done")


def _extract(tmp_path: Path, fake: FakeLLM, *extra: str) -> tuple:
    paper = tmp_path / "film.md"
    paper.write_text(PAPER, encoding="utf-8")
    args = ["extract", str(paper), "--store", str(tmp_path / "store"), "--runs",
            str(tmp_path / "runs"), "--model", "m", "--base-url", fake.base_url, *extra]
    result = CliRunner().invoke(cli, args)
    trace_file = tmp_path / "runs" / "film.trace.json"
    return result, (AgentTrace.load(trace_file) if trace_file.is_file() else None)


def test_a_profile_binds_external_tools_to_the_steps_that_create_a_class(tmp_path: Path) -> None:
    ir = load_ir([DOPING], profile_paths=[_profile(tmp_path)])
    plan = compile_plan(ir)
    [server] = plan.tool_servers
    assert (server.name, server.probe, server.probe_arguments) == (
        "symbols", "element_symbol", {"name": "titanium"})
    [step] = plan.steps
    [external] = step.external
    assert (external.server, external.tools, external.tokens) == ("symbols",
                                                                 ("element_symbol",), 120)
    assert "element_symbol" not in step.tools  # not a graph tool
    message = plan.system_message(step)
    assert message.endswith("(read-only, they write nothing): element_symbol. A dopant's "
                            "formula is its element symbol; element_symbol gives it.")
    assert plan.system_message(step, servers=set()) == f"{plan.system_prompt}\n\n{step.prompt}"
    with pytest.raises(OntologyError, match=r"doping.profile.yaml:6: unknown class dop:Nope"):
        load_ir([DOPING], profile_paths=[_profile(tmp_path, cls="dop:Nope")])
    bad = tmp_path / "bad.profile.yaml"
    bad.write_text("tool_servers:\n  x:\n    command: run-x\n    offer:\n"
                   "      - {classes: [dop:Dopant], tools: [t], prompt: p}\n", encoding="utf-8")
    with pytest.raises(OntologyError, match=r"bad.profile.yaml:5: an offer needs 'tokens'"):
        load_ir([DOPING], profile_paths=[bad])
    bad.write_text("tool_servers:\n  x:\n    command: run-x\n    offer:\n"
                   "      - {classes: [dop:Dopant], tools: [create_dopant], tokens: 9, "
                   "prompt: p}\n",
                   encoding="utf-8")
    with pytest.raises(OntologyError, match=r"bad.profile.yaml:5: tool 'create_dopant' of tool "
                       r"server 'x' has the name of a compiled tool"):
        compile_plan(load_ir([DOPING], profile_paths=[bad]))


def test_the_agent_calls_an_external_tool_and_writes_its_result(tmp_path: Path) -> None:
    with FakeLLM([], default=_symbol_then_dopant) as fake:
        result, trace = _extract(tmp_path, fake, "--ontology", str(DOPING), "--profile",
                                 str(_profile(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "not available" not in result.stderr
    first = fake.requests[0]
    assert {"element_symbol", "create_dopant", "search_paper"} <= _offered(first)
    assert "element_symbol gives it" in first["messages"][0]["content"]
    [step] = trace.steps
    [lookup, write] = [c for c in step.calls if c.tool != "review_writes"]
    assert (lookup.tool, lookup.server, lookup.local, lookup.is_error) == (
        "element_symbol", "symbols", True, False)
    assert lookup.structured == {"name": "erbium", "symbol": "Er"}
    assert (write.tool, write.server, write.local, write.arguments["formula"]) == (
        "create_dopant", None, False, ["Er"])
    assert step.accepted == 1 and step.refused == {} and trace.unavailable == {}
    store = EmbeddedStore(tmp_path / "store")
    try:
        graph = canonical_nquads(store, "film")
        assert '"Er"' in graph
    finally:
        store.close()
    # replay re-issues the graph call only: same graph, no server needed
    replayed = tmp_path / "replayed"
    again = CliRunner().invoke(cli, ["extract", "--replay", str(tmp_path / "runs" /
                                                                "film.trace.json"),
                                     "--store", str(replayed), "--ontology", str(DOPING)])
    assert again.exit_code == 0, again.output
    assert "film: 1 of 1 calls written" in again.stdout
    store = EmbeddedStore(replayed)
    try:
        assert canonical_nquads(store, "film") == graph
    finally:
        store.close()


@pytest.mark.parametrize("how", ["probe refused", "unreachable", "off", "tool missing"])
def test_without_the_server_the_step_runs_without_its_tools(tmp_path: Path, how: str) -> None:
    profile = _profile(tmp_path, refuse=how == "probe refused")
    if how == "tool missing":  # a server of another version
        profile.write_text(profile.read_text(encoding="utf-8").replace(
            "tools: [element_symbol]", "tools: [element_symbol, element_mass]"), encoding="utf-8")
    extra = {"probe refused": [], "tool missing": [], "off": ["--tool-server", "symbols=off"],
             "unreachable": ["--tool-server", f"symbols=http://127.0.0.1:{_closed_port()}/mcp"]}
    with FakeLLM([], default=_symbol_then_dopant) as fake:
        result, trace = _extract(tmp_path, fake, "--ontology", str(DOPING), "--profile",
                                 str(profile), *extra[how])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "not available" in line]
    assert len(warnings) == 1, result.stderr  # said once
    assert warnings[0].startswith("warning: tool server symbols is not available (")
    assert warnings[0].endswith("); the plan steps run without element_symbol" + (
        ", element_mass" if how == "tool missing" else ""))
    assert "Traceback" not in result.output
    why = trace.unavailable["symbols"]
    assert {"probe refused": "the element table is not installed", "off": "switched off",
            "unreachable": "", "tool missing": "it offers no tool element_mass"}[how] in why
    for request in fake.requests:
        assert "element_symbol" not in _offered(request)
        assert "element_symbol gives it" not in request["messages"][0]["content"]
    assert [c.tool for c in trace.steps[0].calls][:1] == ["create_dopant"]


def test_a_tool_server_option_must_name_a_server(tmp_path: Path) -> None:
    with FakeLLM([], default=Reply(content="done")) as fake:
        unknown, _ = _extract(tmp_path, fake, "--ontology", str(DOPING), "--tool-server",
                              "chem=http://127.0.0.1:1/mcp")
        malformed, _ = _extract(tmp_path, fake, "--tool-server", "chemistry")
    assert unknown.exit_code == 2
    assert unknown.output.strip().splitlines()[-1] == (
        "error: --tool-server chem: the ontology's profiles name no such tool server "
        "(known: none)")
    assert malformed.exit_code == 2 and "expected NAME=URL or NAME=off" in malformed.output
    assert fake.requests == [] and not (tmp_path / "store").exists()  # nothing made


def _closed_port() -> int:
    from agent_helpers import free_port

    return free_port()


# The chemistry server's binding, end to end


def _chemistry_missing() -> str | None:
    for module in ("rdkit", "py2opsin"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install 'kgctl[chem]')"
    return None if shutil.which("java") else "Java is not installed (OPSIN needs it)"


def _derive_then_write(request: dict) -> Reply:
    """In the CBU step: derive the building units from the precursors' names, then write the
    MOP with the formulas the tool returned; elsewhere nothing."""
    results = tool_messages(request)
    if "derive_building_units" in _offered(request) and not results:
        return Reply(tool_calls=[("derive_building_units", json.dumps({
            "metal_names": ["Cu(NO3)2·2.5H2O", "copper(II) nitrate"],
            "linker_names": ["5-hydroxyisophthalic acid"]}))])
    if results and '"metal"' in results[-1]["content"]:
        units = json.loads(results[-1]["content"])
        formulas = [units["metal"]["unit"], units["linker"]["formula"]]
        return Reply(tool_calls=[("create_metal_organic_polyhedron", json.dumps({
            "label": "MOP-1", "chemical_building_unit": [{"cbu_formula": f} for f in formulas],
        }))])
    return Reply(content="done")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_cbu_step_derives_building_units_with_the_chemistry_server(tmp_path: Path,
                                                                      transport: str) -> None:
    """stdio: the agent starts `kgctl chem mcp`; http: it connects to a running one."""
    missing = _chemistry_missing()
    if missing:
        pytest.skip(missing)
    paper = DATA / "agent" / "paper.md"
    with ExitStack() as stack:
        extra = [] if transport == "stdio" else [
            "--tool-server", f"chemistry={stack.enter_context(http_server(['chem', 'mcp']))}"]
        fake = stack.enter_context(FakeLLM([], default=_derive_then_write))
        result = CliRunner().invoke(cli, [
            "extract", str(paper), "--store", str(tmp_path / "store"), "--runs",
            str(tmp_path / "runs"), "--model", "m", "--base-url", fake.base_url, *extra])
    assert result.exit_code == 0, result.output
    assert "not available" not in result.stderr
    trace = AgentTrace.load(tmp_path / "runs" / "paper.trace.json")
    assert trace.unavailable == {}
    offering = {s.step for s in trace.steps if "derive_building_units" in s.tools}
    assert offering == {"ontosynthesis"}  # the step that creates CBUs, and only it
    step = next(s for s in trace.steps if s.step == "ontosynthesis")
    derive = next(c for c in step.calls if c.tool == "derive_building_units")
    assert (derive.server, derive.local, derive.is_error) == ("chemistry", True, False)
    metal, linker = derive.structured["metal"]["unit"], derive.structured["linker"]["formula"]
    # copper paddle-wheel; 5-hydroxyisophthalate (C8H4O5) with its two carboxylates counted
    assert metal == "[Cu2]" and linker.endswith("(CO2)2]")
    assert derive.structured["linker"]["composition"] == "C8H4O5"
    assert step.accepted == 1
    store = EmbeddedStore(tmp_path / "store")
    try:
        written = sorted(r["f"].value for r in store.query(CBU_QUERY, paper_id="paper"))
    finally:
        store.close()
    assert written == sorted([metal, linker])
    [with_tool] = [r for r in fake.requests if "derive_building_units" in _offered(r)
                   and len(r["messages"]) == 2]
    assert "call derive_building_units" in with_tool["messages"][0]["content"]


def test_without_java_the_cbu_step_runs_without_chemistry(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The chemistry server as it starts where Java is missing (no PATH to it): its probe is
    refused, the run says so once and goes on without derive_building_units."""
    monkeypatch.setenv("PATH", str(tmp_path))
    paper = DATA / "agent" / "paper.md"
    with FakeLLM([], default=_derive_then_write) as fake:
        result = CliRunner().invoke(cli, [
            "extract", str(paper), "--store", str(tmp_path / "store"), "--runs",
            str(tmp_path / "runs"), "--model", "m", "--base-url", fake.base_url])
    assert result.exit_code == 1, result.output  # this scripted model writes only CBUs
    warnings = [line for line in result.stderr.splitlines() if "not available" in line]
    assert len(warnings) == 1 and warnings[0].startswith(
        "warning: tool server chemistry is not available ("), result.stderr
    trace = AgentTrace.load(tmp_path / "runs" / "paper.trace.json")
    assert trace.status == "complete" and len(trace.steps) == 5
    if _chemistry_missing() in (None, "Java is not installed (OPSIN needs it)"):
        assert trace.unavailable == {"chemistry": "Java is not installed (OPSIN needs Java 8 "
                                                  "or later)"}
    assert not any("derive_building_units" in _offered(r) for r in fake.requests)
