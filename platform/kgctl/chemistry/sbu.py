"""Metal building units (SBUs) from a metal precursor, by the families of `sbu_families.yaml`.

What a metal salt becomes depends on its metal, on what else the precursor carries (a sulfate,
cyclopentadienyl or pyridine ligand) and on how the partner linker binds; the table says which
combination gives which unit, with its source. A precursor written as a bracketed cluster
("[V6O6(OCH3)9(PhPO3)]") is its own unit.

>>> derive_sbu(["copper(II) nitrate trihydrate"], partner="carboxylate").unit
'[Cu2]'
>>> derive_sbu(["Cp2ZrCl2"], partner="carboxylate").family
'zirconocene-trimer'
>>> derive_sbu(["[V6O6(OCH3)9(PhPO3)]"], partner="carboxylate").family
'as-written'
>>> derive_sbu(["sodium chloride"], partner="carboxylate") is None
True
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

Feature = Literal["sulfate", "cyclopentadienyl", "pyridine"]
PartnerKind = Literal["carboxylate", "phosphonate", "sulfonate", "azolate", "calixarene",
                      "pyrogallolarene"]
TABLE = Path(__file__).with_name("sbu_families.yaml")

# English names (and the -ic/-ous/-yl forms salts use) of the metals the families name
METAL_WORDS = {
    "copper": "Cu", "cupric": "Cu", "zirconium": "Zr", "zirconocene": "Zr", "vanadium": "V",
    "vanadyl": "V", "chromium": "Cr", "molybdenum": "Mo", "nickel": "Ni", "cobalt": "Co",
    "iron": "Fe", "ferric": "Fe", "ferrous": "Fe", "magnesium": "Mg", "zinc": "Zn",
    "rhodium": "Rh", "ruthenium": "Ru", "palladium": "Pd", "manganese": "Mn", "cadmium": "Cd",
    "titanium": "Ti",
}
METAL_SYMBOLS = frozenset(METAL_WORDS.values())
FEATURES: dict[str, re.Pattern[str]] = {
    "sulfate": re.compile(r"SO4|sulfate|sulphate", re.IGNORECASE),
    "cyclopentadienyl": re.compile(r"cyclopentadienyl|metallocene|zirconocene|Cp2|C5H5"),
    "pyridine": re.compile(r"\(py\)|pyridine", re.IGNORECASE),
}
_WORD = re.compile(r"[a-z]+")
_SYMBOL = re.compile(r"[A-Z][a-z]?")
_CLUSTER = re.compile(r"^\[[^\[\]]+\]$")


class Family(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    name: str
    unit: str
    metals: tuple[str, ...]
    precursor: tuple[Feature, ...] = ()
    partner: PartnerKind | None = None
    source: str
    seen_in: tuple[str, ...] = ()


class SbuUnit(BaseModel):
    model_config = ConfigDict(frozen=True)
    unit: str
    family: str  # a family id, or "as-written"
    source: str


@cache
def families() -> tuple[Family, ...]:
    data = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    return tuple(Family.model_validate(f) for f in data["families"])


def metals_in(name: str) -> set[str]:
    """Metal symbols a name speaks of, by word ("copper(II)") or by formula ("Cu(NO3)2").

    >>> sorted(metals_in("Cu(NO3)2·3H2O")), sorted(metals_in("dicobalt paddlewheel"))
    (['Cu'], ['Co'])
    """
    words = {symbol for w in _WORD.findall(name.lower())
             for word, symbol in METAL_WORDS.items() if w.endswith(word)}  # "dicopper"
    symbols = {s for s in _SYMBOL.findall(name) if s in METAL_SYMBOLS}
    return words | symbols


def derive_sbu(precursor: list[str] | tuple[str, ...], *, partner: str | None
               ) -> SbuUnit | None:
    """The unit a metal precursor (its names) forms with a partner linker of that kind."""
    for name in precursor:
        if _CLUSTER.match(name.strip()) and metals_in(name):
            return SbuUnit(unit=name.strip(), family="as-written",
                           source="the precursor is written as the cluster itself")
    metals = set().union(*(metals_in(n) for n in precursor)) if precursor else set()
    text = " ".join(precursor)
    for family in families():
        found = [m for m in family.metals if m in metals]
        if (found and all(FEATURES[f].search(text) for f in family.precursor)
                and family.partner in (None, partner)):
            return SbuUnit(unit=family.unit.replace("{M}", found[0]), family=family.id,
                           source=family.source)
    return None
