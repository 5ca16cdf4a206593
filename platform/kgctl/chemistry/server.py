"""The chemistry MCP server: names to structures, identifiers and building units, offline.

Built on kgctl's `ToolServer` (one error shape, input limits, annotations, the shared
transports). The OPSIN JVM starts on the first call that needs it, so `initialize` answers at
once. A missing optional part (Java, RDKit) is a refusal with the envelope, like every other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from kgctl.chemistry.cbu import derive_units
from kgctl.chemistry.errors import ChemistryUnavailable
from kgctl.chemistry.linker import derive_linker
from kgctl.chemistry.names import resolve
from kgctl.chemistry.opsin import MAX_NAME_CHARS, Opsin
from kgctl.chemistry.structure import describe
from kgctl.feedback import Envelope
from kgctl.toolserver.limits import Limits
from kgctl.toolserver.server import READ, ToolServer, error_result, ok_result

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


class NotFound(BaseModel):
    found: bool = False
    message: str


def build_server(opsin: Opsin) -> ToolServer:
    server = ToolServer("kgctl-chemistry", instructions=INSTRUCTIONS, limits=LIMITS)

    def answer(fn: Callable[[], BaseModel]) -> CallToolResult:
        try:
            return ok_result(fn())
        except ChemistryUnavailable as exc:
            return error_result(Envelope(code="unavailable", message=str(exc),
                                         retryable=False))

    @server.tool(annotations=READ)
    def parse_names(names: Names) -> CallToolResult:
        """Structure (SMILES, InChI, InChIKey, Hill formula) the names agree on."""
        return answer(lambda: resolve(opsin, names))

    @server.tool(annotations=READ)
    def describe_structure(smiles: Smiles) -> CallToolResult:
        """Canonical SMILES, InChI, InChIKey and Hill formula of a structure."""
        return answer(lambda: describe(smiles) or NotFound(message="not a readable SMILES"))

    @server.tool(annotations=READ)
    def derive_linker_unit(smiles: Smiles) -> CallToolResult:
        """The organic building unit of a linker: binding groups removed and counted."""
        return answer(lambda: derive_linker(smiles)
                      or NotFound(message="no carboxylate, sulfonate, phosphonate or azole"))

    @server.tool(annotations=READ)
    def derive_building_units(metal_names: Names, linker_names: Names) -> CallToolResult:
        """Metal and linker building units of a MOP from its precursors' names."""
        return answer(lambda: derive_units(opsin, metal=metal_names, linker=linker_names))

    return server
