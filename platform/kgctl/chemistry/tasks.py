"""What a chemistry worker computes, and the worker itself (`python -m kgctl.chemistry.tasks`,
started by `workers.Pool`): one JSON line in ({"task", "args"}), one out ({"ok": answer} or
{"unavailable": why}); the first line out, {"ready": true}, once RDKit and OPSIN answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from kgctl.chemistry.cbu import derive_units
from kgctl.chemistry.errors import ChemistryUnavailable
from kgctl.chemistry.linker import derive_linker
from kgctl.chemistry.names import resolve
from kgctl.chemistry.opsin import Opsin
from kgctl.chemistry.structure import describe


class NotFound(BaseModel):
    found: bool = False
    message: str


def _describe(opsin: Opsin, smiles: str) -> BaseModel:
    return describe(smiles) or NotFound(message="not a readable SMILES")


def _linker(opsin: Opsin, smiles: str) -> BaseModel:
    return derive_linker(smiles) or \
        NotFound(message="no carboxylate, sulfonate, phosphonate or azole")


def _units(opsin: Opsin, metal: list[str], linker: list[str]) -> BaseModel:
    return derive_units(opsin, metal=metal, linker=linker)


TASKS: dict[str, Callable[..., BaseModel]] = {
    "parse_names": resolve, "describe_structure": _describe, "derive_linker_unit": _linker,
    "derive_building_units": _units}


def serve() -> None:
    """Answer the pool's calls until it hangs up."""
    def say(answer: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()

    with Opsin() as opsin:
        try:
            resolve(opsin, ["methane"])  # warm: RDKit imported, the JVM answering
        except ChemistryUnavailable:
            pass  # reported again by every call that needs it
        say({"ready": True})
        for line in sys.stdin:
            call = json.loads(line)
            try:
                say({"ok": TASKS[call["task"]](opsin, *call["args"]).model_dump(mode="json")})
            except ChemistryUnavailable as exc:
                say({"unavailable": str(exc)})


if __name__ == "__main__":
    serve()
