"""The chemistry MCP server: names to structures, identifiers and building units, offline.

Built on kgctl's `ToolServer` (one error shape, input limits, annotations, the shared
transports). Every call runs in a pool of killable workers (`workers.Pool`) with a deadline, so
a name that would keep OPSIN busy for a minute is stopped and other sessions' calls go on; the
work a name or a SMILES string may cause is bounded before that (`bounds`). The workers start
in the background, so `initialize` answers at once. A missing optional part (Java, RDKit) is a
refusal with the envelope, like every other.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp_types import CallToolResult, TextContent
from pydantic import Field

from kgctl.chemistry.bounds import MAX_ATOMS, MAX_EXPANSION, atoms, expansion
from kgctl.chemistry.errors import ChemistryUnavailable
from kgctl.chemistry.opsin import MAX_NAME_CHARS
from kgctl.chemistry.workers import DeadlineExceeded, Pool
from kgctl.feedback import Envelope
from kgctl.toolserver.limits import Limits
from kgctl.toolserver.server import READ, ToolServer, error_result

MAX_NAMES = 20
MAX_SMILES = 2000
LIMITS = Limits(max_text=MAX_SMILES, max_items=MAX_NAMES)
Names = Annotated[list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]],
                  Field(min_length=1, max_length=MAX_NAMES,
                        description="names of one chemical as the paper writes them")]
Smiles = Annotated[str, Field(max_length=MAX_SMILES, description="a SMILES string")]
INSTRUCTIONS = (
    "Chemistry for building units. parse_names turns the names of one chemical into a structure "
    "(the names vote); derive_building_units gives a MOP's metal and linker units from the "
    "names of its metal precursor and its linker, as the ontology's CBU notation writes them."
)


def build_server(pool: Pool) -> ToolServer:
    """The server; `pool` (not yet started) is started in the background and serves every call."""
    server = ToolServer("kgctl-chemistry", instructions=INSTRUCTIONS, limits=LIMITS,
                        setup=pool.start)

    def answer(task: str, *args: Any) -> CallToolResult:
        try:
            answer = pool.call(task, *args)
            return CallToolResult(content=[TextContent(type="text", text=json.dumps(answer))],
                                  structured_content=answer)
        except ChemistryUnavailable as exc:
            return error_result(Envelope(code="unavailable", message=str(exc),
                                         retryable=False))
        except DeadlineExceeded as exc:
            return error_result(Envelope(code="timeout", message=f"{task}: {exc} (at most "
                                         f"{pool.deadline:g} s per call)",
                                         hint="retry later, or give a simpler name"))

    def names_within(field: str, names: list[str]) -> CallToolResult | None:
        for i, name in enumerate(names):
            if (size := expansion(name)) > MAX_EXPANSION:
                return error_result(_too_much(f"{field}[{i}]", size, f"the name multiplies "
                                              f"one group {size} times; at most "
                                              f"{MAX_EXPANSION}"))
        return None

    def smiles_within(smiles: str) -> CallToolResult | None:
        if (size := atoms(smiles)) > MAX_ATOMS:
            return error_result(_too_much("smiles", size, f"{size} atoms; at most {MAX_ATOMS}"))
        return None

    @server.tool(annotations=READ)
    def parse_names(names: Names) -> CallToolResult:
        """Structure (SMILES, InChI, InChIKey, Hill formula) the names agree on."""
        return names_within("names", names) or answer("parse_names", names)

    @server.tool(annotations=READ)
    def describe_structure(smiles: Smiles) -> CallToolResult:
        """Canonical SMILES, InChI, InChIKey and Hill formula of a structure."""
        return smiles_within(smiles) or answer("describe_structure", smiles)

    @server.tool(annotations=READ)
    def derive_linker_unit(smiles: Smiles) -> CallToolResult:
        """The organic building unit of a linker: binding groups removed and counted."""
        return smiles_within(smiles) or answer("derive_linker_unit", smiles)

    @server.tool(annotations=READ)
    def derive_building_units(metal_names: Names, linker_names: Names) -> CallToolResult:
        """Metal and linker building units of a MOP from its precursors' names."""
        return (names_within("metal_names", metal_names)
                or names_within("linker_names", linker_names)
                or answer("derive_building_units", metal_names, linker_names))

    return server


def _too_much(field: str, size: int, message: str) -> Envelope:
    return Envelope(code="too_large", field=field, value=size, message=message,
                    hint="this is no precursor or linker a paper names; leave it out")
