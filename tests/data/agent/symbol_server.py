"""A tiny external MCP server for the agent's tests (stdio): one read-only tool, no chemistry.

Run as `python symbol_server.py`; `python symbol_server.py --refuse` answers every call with an
error, as a server whose optional part is missing does.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

SYMBOLS = {"erbium": "Er", "ytterbium": "Yb", "titanium": "Ti"}
server = MCPServer("symbols")


@server.tool()
def element_symbol(name: str) -> dict[str, str]:
    """The symbol of a chemical element from its English name."""
    if "--refuse" in sys.argv:
        raise ToolError("the element table is not installed")
    return {"name": name, "symbol": SYMBOLS.get(name.strip().lower(), "")}


if __name__ == "__main__":
    server.run("stdio")
