"""The MCP grounding server through a real client session over stdio."""

from __future__ import annotations

import json
import sys

import anyio
from grounding_helpers import build_small_reference, iri
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def test_mcp_lookup_identifier_describe_and_error(tmp_path):
    reference = build_small_reference(tmp_path / "species")
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", "from kgctl.cli import main; main()", "ground", "--reference", str(reference),
        "--cache-dir", str(tmp_path / "cache"), "mcp"])

    async def session() -> tuple:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            found = await s.call_tool("lookup_species", {"name": "MeCN", "k": 3})
            by_cas = await s.call_tool("lookup_identifier", {"kind": "cas", "value": "64-17-5"})
            described = await s.call_tool("describe_species", {"iri": iri("95-50-1")})
            bad = await s.call_tool("lookup_species", {"name": "x" * 10_000})
            return found, by_cas, described, bad

    found, by_cas, described, bad = anyio.run(session)
    assert found.structured_content["match"]["iri"] == iri("75-05-8")
    assert len(found.structured_content["candidates"]) <= 3
    assert [c["iri"] for c in by_cas.structured_content["candidates"]] == [iri("64-17-5")]
    assert "95-50-1" in described.structured_content["identifiers"]["cas"]
    assert bad.is_error and json.loads(bad.content[0].text)["code"] == "too_large"
    assert json.loads(bad.content[0].text)["field"] == "name"
