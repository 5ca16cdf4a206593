"""`kgctl mcp serve`: the instantiation MCP server over stdio or streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgctl.errors import InputError
from kgctl.ontology.options import ir_from_options, ontology_options
from kgctl.toolserver.transport import serve as run_server
from kgctl.toolserver.transport import transport_options

DEFAULT_PORT = 8765


@click.group(name="mcp")
def command() -> None:
    """MCP servers of kgctl.

    Example: kgctl mcp serve --store kg.db --paper 10.1021/ja105986b
    """


@command.command(name="serve")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="embedded store folder (created if missing)")
@click.option("--endpoint", help="SPARQL endpoint URL of a remote store")
@transport_options(DEFAULT_PORT)
@click.option("--no-feedback", is_flag=True,
              help="ablation: turn checks off and write whatever a call gives")
@click.option("--paper", help="paper (DOI or id) every session starts bound to; "
                              "a session switches with the select_paper tool")
@ontology_options
def serve(store_path: Path | None, endpoint: str | None, transport: str, host: str, port: int,
          session_idle: float, no_feedback: bool, paper: str | None, **ontology: Any) -> None:
    """Serve the tools compiled from the ontology; the server owns the store. Over HTTP
    several clients share it, each session with its own paper (docs/mcp.md).

    Example: kgctl mcp serve --store kg.db --transport http --port 8765
    """
    from kgctl.instantiation.server import build_server
    from kgctl.ontology import default_ir
    from kgctl.store import open_store

    if store_path is None and endpoint is None:
        raise InputError("give --store PATH or --endpoint URL")
    if store_path is not None and endpoint is not None:
        raise InputError("give --store or --endpoint, not both")
    ir = ir_from_options(ontology) or default_ir  # the default: in the background
    store = open_store(path=store_path, endpoint=endpoint)
    try:
        server = build_server(ir, store, feedback=not no_feedback, paper_id=paper)
        run_server(server, transport=transport, host=host, port=port, session_idle=session_idle)
    finally:
        store.close()
