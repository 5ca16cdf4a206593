"""Opt-in: the servers through an MCP client nobody here wrote, the TypeScript SDK on node.

Set KGCTL_MCP_TS_SDK to a folder where `npm install @modelcontextprotocol/sdk` ran; without it
(or without node) the tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import KGCTL, SYNTHESES, http_server

from kgctl import __version__
from kgctl.store import EmbeddedStore

SCRIPT = Path(__file__).parent / "data" / "mcp" / "outside_client.mjs"
SDK = os.environ.get("KGCTL_MCP_TS_SDK", "")
CLIENT_TIMEOUT_S = 180


def _skip_reason() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not SDK:
        return "set KGCTL_MCP_TS_SDK to a folder with node_modules/@modelcontextprotocol/sdk"
    if not (Path(SDK) / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        return f"no @modelcontextprotocol/sdk under {SDK}"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def _start(target: list[str], calls: list[dict[str, Any]], folder: Path) -> subprocess.Popen:
    calls_file = folder / f"calls-{len(list(folder.glob('calls-*')))}.jsonl"
    calls_file.write_text("".join(json.dumps(call) + "\n" for call in calls))
    return subprocess.Popen(["node", str(SCRIPT), SDK, str(calls_file), *target],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> dict[str, Any]:
    out = process.stdout.read()
    assert process.wait(timeout=CLIENT_TIMEOUT_S) == 0, process.stderr.read()[-2000:]
    return json.loads(out)


def _writes(paper: str) -> list[dict[str, Any]]:
    return [{"name": "select_paper", "arguments": {"paper_id": paper}},
            *({"name": "create_chemical_synthesis",
               "arguments": {"label": f"{paper} {n}", "chemical_output": {"label": "o"}}}
              for n in range(3))]


def test_typescript_clients_share_an_http_server_each_in_its_own_paper(tmp_path):
    refusals = [{"name": "no_such_tool", "arguments": {}},
                {"name": "create_chemical_synthesis", "arguments": {"lable": "x"}},
                {"name": "list_instances", "arguments": {"class_name": "x" * 1_000_000}}]
    with http_server(["mcp", "serve", "--store", str(tmp_path / "kg")]) as url:
        clients = [_start(["http", url], _writes("paper-a") + refusals, tmp_path),
                   _start(["http", url], _writes("paper-b"), tmp_path)]
        a, b = (_finish(process) for process in clients)
    assert a["server"] == {"name": "kgctl-instantiation", "version": __version__}
    assert a["sessionId"] and b["sessionId"] and a["sessionId"] != b["sessionId"]
    assert "prompts" in a["capabilities"] and "resources" in a["capabilities"]
    assert all(t["annotations"]["readOnlyHint"] in (True, False) for t in a["tools"])
    writes_a, (unknown_tool, unknown_arg, too_large) = a["results"][:4], a["results"][4:]
    assert not any(r["isError"] for r in writes_a + b["results"])
    assert {r["structured"]["paper"] for r in writes_a} == {"paper-a"}
    assert {r["structured"]["paper"] for r in b["results"]} == {"paper-b"}
    for result, code in ((unknown_tool, "unknown_tool"), (unknown_arg, "unknown_argument"),
                         (too_large, "too_large")):
        assert result["isError"] and json.loads(result["text"])["code"] == code, result
    store = EmbeddedStore(tmp_path / "kg")
    try:
        assert sorted(store.papers()) == ["paper-a", "paper-b"]
        assert all(len(list(store.query(SYNTHESES, paper_id=p))) == 3 for p in store.papers())
    finally:
        store.close()


def test_typescript_client_over_stdio_gets_envelopes_for_sdk_type_errors(tmp_path):
    calls = [{"name": "list_templates", "arguments": {}},
             {"name": "find_entities", "arguments": {"label": "cage", "k": "five"}},
             {"name": "find_entities", "arguments": {"label": "x" * 1_000_000}}]
    result = _finish(_start(["stdio", *KGCTL, "query", "serve", "--store",
                             str(tmp_path / "kg")], calls, tmp_path))
    listed, type_error, too_large = result["results"]
    assert result["server"]["version"] == __version__ and not listed["isError"]
    assert "prompts" not in result["capabilities"] and "resources" not in result["capabilities"]
    assert json.loads(type_error["text"])["code"] == "datatype" and type_error["isError"]
    assert too_large["structured"]["code"] == "too_large"  # no output schema: also structured
