"""Abbreviations from the data table ``abbreviations.tsv`` of the default domain pack's grounding
folder (none when the pack has no such table).

An abbreviation adds its expansion as one more surface name; it never replaces the name.
Case matters first (``DMA`` is not ``dma``); a case-insensitive hit is used only when unique.

>>> expansions(" meoh ")
('methanol',)
>>> expansions("copper nitrate")
()
"""

from __future__ import annotations

import csv
from functools import cache

from kgctl.packs import load_pack

TABLE = "abbreviations.tsv"


@cache
def table() -> tuple[tuple[str, str, str], ...]:
    """Rows (abbreviation, expansion, source) of the table."""
    folder = load_pack().part("grounding")
    path = folder / TABLE if folder is not None else None
    if path is None or not path.is_file():
        return ()
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t"))
    return tuple((r["abbreviation"], r["expansion"], r["source"]) for r in rows)


@cache
def _maps() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    exact: dict[str, list[str]] = {}
    folded: dict[str, set[str]] = {}
    for abbreviation, expansion, _ in table():
        exact.setdefault(abbreviation, []).append(expansion)
        folded.setdefault(abbreviation.casefold(), set()).add(expansion)
    return ({k: tuple(v) for k, v in exact.items()},
            {k: tuple(sorted(v)) for k, v in folded.items() if len(v) == 1})


def expansions(name: str) -> tuple[str, ...]:
    """Expansions of `name` if the whole name is a known abbreviation."""
    key = name.strip()
    exact, folded = _maps()
    return exact.get(key) or folded.get(key.casefold(), ())
