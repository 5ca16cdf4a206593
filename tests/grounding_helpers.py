"""Shared helpers of the grounding tests: a small reference store from a slice of the tables."""

from __future__ import annotations

from pathlib import Path

from kgctl.chemistry.reference import build_reference, read_rows, table_paths

# species the tests ground by name; plus the first rows of the tables as distractors
WANTED = {
    "64-17-5": "ethanol", "67-56-1": "methanol", "68-12-2": "N,N-dimethylformamide",
    "7732-18-5": "water", "75-05-8": "acetonitrile", "95-50-1": "1,2-dichlorobenzene",
    "541-73-1": "1,3-dichlorobenzene", "106-46-7": "1,4-dichlorobenzene",
    "7758-89-6": "copper(I) chloride", "7447-39-4": "copper(II) chloride",
    "100-21-0": "terephthalic acid",
    "2597-43-5": "hydroxymethyl radical (IUPAC name: methanol)",
    "7791-20-0": "nickel(II) chloride hexahydrate (no common name; formula Cl2H12NiO6)",
}
DISTRACTORS = 300


def slice_rows() -> list:
    rows = []
    for i, row in enumerate(read_rows(table_paths())):
        if i < DISTRACTORS or row.cas[0] in WANTED:
            rows.append(row)
    return rows


def build_small_reference(path: Path) -> Path:
    build_reference(path, slice_rows())
    return path


def iri(cas: str) -> str:
    return "https://w3id.org/kgctl/reference/species/" + cas
