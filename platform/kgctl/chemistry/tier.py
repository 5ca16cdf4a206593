"""The structure tier of grounding: names parsed to a structure, found by its InChIKey.

Names that no label matches may still be systematic names of a species the reference holds:
OPSIN turns them into a structure (the names voting, see kgctl.chemistry.names) and the
structure's InChIKey finds the species. It is decisive only when exactly one reference species
carries that key, and it outvotes a label match (method `structure`, weight 4): a structure is
read from the name itself, a label may be a wrong synonym in the reference data. A species
minted earlier (kgctl.chemistry.mint) is found the same way, with method `minted`. The names
that are formulas are the stated formula, not parsed: an ion whose neutral parent has that
formula is looked up as the parent (a linker's anion named, the acid's formula given). Needs the
optional chemistry part (`kgctl ground --structures`).
"""

from __future__ import annotations

from collections.abc import Sequence

from kgctl.chemistry.mint import METHOD, MINTED_BASE, stated_formulas, stated_parent
from kgctl.chemistry.names import resolve
from kgctl.chemistry.opsin import Opsin
from kgctl.grounding.matcher import LookupResult, Matcher


class StructureTier:
    """Grounds the names of one entity through their parsed structure."""

    def __init__(self, matcher: Matcher, opsin: Opsin) -> None:
        self.matcher = matcher
        self.opsin = opsin

    def lookup(self, names: Sequence[str]) -> LookupResult | None:
        """An InChIKey result for the structure the names agree on, or None if none parses."""
        stated = stated_formulas(names)
        resolution = resolve(self.opsin, [n for n in names if n not in stated])
        if resolution.structure is None:
            return None
        key = stated_parent(resolution.structure, stated).inchikey
        hits = [c.model_copy(update={"method": METHOD if c.iri.startswith(MINTED_BASE)
                                     else "structure"})
                for c in self.matcher.lookup_identifier("inchikey", key)]
        reason = ("unique inchikey of the parsed structure" if len(hits) == 1
                  else f"parsed structure {key} is {'shared' if hits else 'not'} in the "
                  "reference")
        return LookupResult(name=" | ".join(resolution.agreeing), match=hits[0]
                            if len(hits) == 1 else None, candidates=tuple(hits[:10]),
                            reason=reason)
