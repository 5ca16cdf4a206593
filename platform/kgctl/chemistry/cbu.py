"""Both building units of a MOP from its precursors' names: the linker's and the metal's.

The linker is parsed (OPSIN, the names voting) and its binding groups removed and counted; how
it binds (its main group, or a macrocycle family OPSIN cannot parse) picks the metal family.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from kgctl.chemistry.linker import LinkerUnit, derive_linker
from kgctl.chemistry.names import resolve
from kgctl.chemistry.opsin import Opsin
from kgctl.chemistry.sbu import SbuUnit, derive_sbu

MACROCYCLES = (("pyrogallolarene", re.compile(r"pyrogallol\s*\[\d\]\s*arene", re.I)),
               ("calixarene", re.compile(r"calix\s*\[\d\]\s*arene", re.I)))
# a linker OPSIN cannot parse still says it is a carboxylic acid by name, or by the H_nL
# notation of a polyprotic acid ("H3L", "H4ABTC"), which in MOP papers means a carboxylic acid
CARBOXYLIC = re.compile(r"carboxyl|oic acid|benzoate|^H\d[A-Za-z(]")


class BuildingUnits(BaseModel):
    model_config = ConfigDict(frozen=True)
    linker: LinkerUnit | None
    linker_names: tuple[str, ...]  # the names that agreed on the linker's structure
    binding: str | None  # how the linker binds: carboxylate, ..., calixarene, pyrogallolarene
    metal: SbuUnit | None


def derive_units(opsin: Opsin, *, metal: list[str], linker: list[str]) -> BuildingUnits:
    """Building units from the metal precursor's and the linker precursor's names."""
    resolution = resolve(opsin, linker)
    unit = derive_linker(resolution.structure.smiles) if resolution.structure else None
    binding = next((kind for kind, pattern in MACROCYCLES
                    if any(pattern.search(n) for n in linker)), None)
    if binding is None and unit is not None:
        binding = max(unit.groups, key=lambda k: unit.groups[k])
    if binding is None and any(CARBOXYLIC.search(n.strip()) for n in linker):
        binding = "carboxylate"
    return BuildingUnits(linker=unit, linker_names=resolution.agreeing, binding=binding,
                         metal=derive_sbu(metal, partner=binding))
