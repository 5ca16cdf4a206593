"""The reference species KG: the PubChem-derived tables of `chemicals` as OntoSpecies triples.

Each table row (CID, CAS, formula, MW, SMILES, InChI, InChIKey, IUPAC name, common name,
synonyms...) becomes one ``os:Species`` with ``rdfs:label`` (common name), ``skos:altLabel``
(synonyms) and OntoSpecies v2 identifier nodes (``os:hasInChIKey/os:value`` ...). OntoSpecies v2
has no CAS property; CAS numbers use ``kgref:hasCASRegistryNumber/os:value``.

>>> row = parse_row("702\\t64-17-5\\tC2H6O\\t46.07\\tCCO\\tC2H6O/c1-2-3/h3H,2H2,1H3\\t"
...                 "LFQSCWFLJHTTHZ-UHFFFAOYSA-N\\tethanol\\tethanol\\tethyl alcohol\\t64-17-5")
>>> row.iri, row.label, row.synonyms
('https://w3id.org/kgctl/reference/species/64-17-5', 'ethanol', ('ethyl alcohol',))
>>> row.inchi
'InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3'
>>> len(list(species_quads(row)))  # type, label, 1 synonym, 7 identifier nodes x 3
24
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import chemicals
from pydantic import BaseModel, ConfigDict
from pyoxigraph import Literal, NamedNode, Quad, Store

from kgctl.chemistry.naming import canonical_identifier
from kgctl.errors import InputError, StoreError

OS = "http://www.theworldavatar.com/ontology/ontospecies/OntoSpecies.owl#"
KGREF = "https://w3id.org/kgctl/reference/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
SKOS_ALT = NamedNode("http://www.w3.org/2004/02/skos/core#altLabel")
OS_SPECIES = NamedNode(OS + "Species")
OS_VALUE = NamedNode(OS + "value")
SPECIES_BASE = KGREF + "species/"
# species minted from parsed structures (kgctl.chemistry.mint): their own graph, kept on rebuild
MINTED_GRAPH = NamedNode(KGREF + "minted")
# identifier field -> (property, node class)
IDENTIFIER_NODES = {
    "inchikey": (OS + "hasInChIKey", OS + "InChIKey"),
    "inchi": (OS + "hasInChI", OS + "InChI"),
    "smiles": (OS + "hasSMILES", OS + "SMILES"),
    "iupac_name": (OS + "hasIUPACName", OS + "IUPACName"),
    "formula": (OS + "hasMolecularFormula", OS + "MolecularFormula"),
    "cid": (OS + "hasCID", OS + "CID"),
    "cas": (KGREF + "hasCASRegistryNumber", KGREF + "CASRegistryNumber"),
}
# the PubChem-derived tables that `chemicals` itself loads by default, main table first
TABLES = (
    "chemical identifiers pubchem large.tsv",
    "chemical identifiers pubchem small.tsv",
    "Inorganic db.tsv",
    "Anion db.tsv",
    "Cation db.tsv",
)
_FIXED_COLUMNS = 9
_NO_CID = "-1"


class SpeciesRow(BaseModel):
    """One species of the reference tables."""

    model_config = ConfigDict(frozen=True)
    iri: str
    label: str
    synonyms: tuple[str, ...]
    cas: tuple[str, ...]  # first is the primary CAS number
    cid: str | None
    formula: str | None
    smiles: str | None
    inchi: str | None
    inchikey: str | None
    iupac_name: str | None


def table_paths() -> list[Path]:
    """The bundled tables of the installed `chemicals` package."""
    folder = Path(chemicals.__file__).parent / "Identifiers"
    paths = [folder / name for name in TABLES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise InputError(f"reference tables not found: {', '.join(missing)}")
    return paths


def read_rows(paths: Iterable[Path], *, limit: int | None = None) -> Iterator[SpeciesRow]:
    """Rows of the tables, first occurrence of a CAS number wins; `limit` caps the count."""
    seen: set[str] = set()
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                row = parse_row(line)
                if row is None or row.cas[0] in seen:
                    continue
                seen.add(row.cas[0])
                yield row
                if limit is not None and len(seen) >= limit:
                    return


_REGISTRY_CODE = re.compile(
    r"^(unii|einecs|nsc|chembl|dtxsid|dtxcid|schembl|mfcd|akos|ccris|hsdb|ai3|brn|zinc|ncgc|"
    r"bdbm|tox21|ks|ctk|hms|smr|mls|ls|spectrum|fema|caswell|epa|un|ec)[-_ :]?[a-z0-9-]*\d"
    r"[a-z0-9-]*$", re.IGNORECASE)


def is_registry_code(name: str) -> bool:
    """A registry or vendor code rather than a name.

    >>> is_registry_code("unii-ah2w0vv8ax"), is_registry_code("NSC 4953")
    (True, True)
    >>> is_registry_code("copper(ii) phosphate trihydrate"), is_registry_code("ethanol")
    (False, False)
    """
    return bool(_REGISTRY_CODE.match(name.strip()))


def parse_row(line: str) -> SpeciesRow | None:
    """One table line as a species, or None when it carries no valid CAS number."""
    fields = line.rstrip("\n").split("\t")
    if len(fields) < _FIXED_COLUMNS:
        return None
    cid, cas, formula, _mw, smiles, inchi, inchikey, iupac, common = fields[:_FIXED_COLUMNS]
    if canonical_identifier("cas", cas) is None:
        return None
    names = list(dict.fromkeys(s.strip() for s in (common, *fields[_FIXED_COLUMNS:])))
    # a registry code ("unii-ah2w0vv8ax") is kept as a synonym but never shown as the name
    label = next((n for n in names if n and not is_registry_code(n)), None) or iupac or cas
    synonyms: list[str] = []
    extra_cas: list[str] = []
    for name in names:
        if not name or name in (label, cas):
            continue
        if canonical_identifier("cas", name) is not None:
            extra_cas.append(name)  # older or alternative CAS numbers listed as synonyms
        else:
            synonyms.append(name)
    return SpeciesRow(
        iri=SPECIES_BASE + cas,
        label=label,
        synonyms=tuple(synonyms),
        cas=(cas, *extra_cas),
        cid=cid if cid != _NO_CID and cid.isdigit() else None,
        formula=formula or None,
        smiles=smiles or None,
        inchi=canonical_identifier("inchi", inchi) if inchi else None,
        inchikey=inchikey or None,
        iupac_name=iupac or None,
    )


def species_quads(row: SpeciesRow) -> Iterator[Quad]:
    """The triples of one species (default graph), identifier nodes named after the species."""
    s = NamedNode(row.iri)
    yield Quad(s, RDF_TYPE, OS_SPECIES)
    yield Quad(s, RDFS_LABEL, Literal(row.label))
    for name in row.synonyms:
        yield Quad(s, SKOS_ALT, Literal(name))
    values = {
        "inchikey": [row.inchikey], "inchi": [row.inchi], "smiles": [row.smiles],
        "iupac_name": [row.iupac_name], "formula": [row.formula], "cid": [row.cid],
        "cas": list(row.cas),
    }
    for field, (prop, cls) in IDENTIFIER_NODES.items():
        for i, value in enumerate(v for v in values[field] if v):
            node = NamedNode(f"{row.iri}/{cls.rsplit('#', 1)[-1].rsplit('/', 1)[-1]}"
                             + (f"-{i + 1}" if i else ""))
            yield Quad(s, NamedNode(prop), node)
            yield Quad(node, RDF_TYPE, NamedNode(cls))
            yield Quad(node, OS_VALUE, Literal(value))


def build_reference(
    path: Path, rows: Iterable[SpeciesRow], *, progress: Callable[[int], None] | None = None
) -> int:
    """Write the reference graph into a fresh pyoxigraph store at `path` (bulk load).

    The store is built beside `path` and moved into place, so a failed build leaves the
    previous reference untouched; the minted species of the previous store are carried over.
    Returns the number of species read from the tables.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} is a file, not a store folder")
    staging = path.with_name(path.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    count = 0

    def quads() -> Iterator[Quad]:
        nonlocal count
        for row in rows:
            count += 1
            if progress is not None:
                progress(1)
            yield from species_quads(row)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        store = Store(str(staging))
        store.bulk_extend(quads())
        if path.is_dir():
            store.extend(Store.read_only(str(path)).quads_for_pattern(None, None, None,
                                                                      MINTED_GRAPH))
        store.flush()
        store.optimize()
        del store
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise StoreError(f"cannot build the reference store at {path}: {exc}") from exc
    if path.exists():
        shutil.rmtree(path)
    staging.rename(path)
    return count
