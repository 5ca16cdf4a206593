"""Minting: a new reference species from a parsed structure, only when the evidence agrees.

A chemical whose names parse (OPSIN, the names voting) to a structure the reference lacks is
minted as a species of its own when the paper gives agreeing evidence for that structure: a
stated formula equal to the parsed one (with or without the water of a stated hydrate; an ion
whose neutral parent has the stated formula is that parent: the name of a deprotonated linker
given with the acid's formula), or two differently spelled names parsing to the same InChIKey.
Minted species live in their own named graph of the reference store (`MINTED_GRAPH`), never
among the source tables; their IRI is made from the InChIKey, so minting again adds nothing.
Each paper entity a species was minted from gets a provenance record: the names and formula,
the paper and entity, the OPSIN and RDKit versions and the agreeing evidence. Nothing is
minted when a name equals a reference label (the reference has the species under that name,
perhaps ambiguously: a choice for a person), nor from a name with hydro prefixes without
locants ("tetrahydropyrene-2,7-dicarboxylic acid": OPSIN places them, perhaps wrongly, and the
formula cannot tell the isomers apart). A later entity of the same run whose names parse
to a species minted earlier grounds to it, as it would through the structure tier on a re-run.

>>> formulas_agree("C8H4O4-2", "[C8H4O4]2-"), formulas_agree("H6CuN2O9", "Cu(NO3)2·3H2O")
(True, True)
>>> formulas_agree("CuN2O6", "Cu(NO3)2·2.5H2O"), formulas_agree("C8H6O4", "C8H8O4")
(True, False)
>>> [bool(_UNLOCATED_HYDRO.search(n)) for n in ("tetrahydropyrene", "4,5,9,10-tetrahydropyrene")]
[True, False]
>>> minted_iri("KKEYFWRCBNTPAC-UHFFFAOYSA-N")
'https://w3id.org/kgctl/reference/species/inchikey/KKEYFWRCBNTPAC-UHFFFAOYSA-N'
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pyoxigraph import Literal, NamedNode, Quad

from kgctl.chemistry.formula import hill_formula
from kgctl.chemistry.names import Resolution, resolve
from kgctl.chemistry.opsin import Opsin, opsin_jar
from kgctl.chemistry.reference import (
    IDENTIFIER_NODES,
    KGREF,
    MINTED_GRAPH,
    OS_SPECIES,
    OS_VALUE,
    RDF_TYPE,
    RDFS_LABEL,
    SKOS_ALT,
    SPECIES_BASE,
)
from kgctl.chemistry.structure import CHARGED, Structure, uncharged
from kgctl.errors import InputError
from kgctl.grounding.matcher import Candidate, Matcher
from kgctl.grounding.normalise import squeeze
from kgctl.store import open_store
from kgctl.store.base import GraphStore

PROV = "http://www.w3.org/ns/prov#"
GENERATED_BY, USED = NamedNode(PROV + "wasGeneratedBy"), NamedNode(PROV + "used")
RECORDED = "SELECT ?r WHERE { GRAPH ?g { ?s ?generated ?r . ?r ?used ?e } } LIMIT 1"
MINTED_BASE = SPECIES_BASE + "inchikey/"
METHOD = "minted"
EXACT_METHODS = ("exact", "squeezed", "abbreviation")
_ELEMENT = re.compile(r"([A-Z][a-z]?)(\d*)")
# "tetrahydropyrene" without locants ("4,5,9,10-tetrahydropyrene" has them)
_UNLOCATED_HYDRO = re.compile(r"(?<![\d'′]-)(?:di|tetra|hexa|octa|deca)hydro", re.IGNORECASE)
_HYDRATE_WATER = re.compile(r"[·•∙⋅*.]\s*(?:\d+(?:\.\d+)?|[xn])?\s*H2O\s*$")


class Minted(BaseModel):
    """One species to mint and the evidence of the one entity it is minted from."""

    model_config = ConfigDict(frozen=True)
    iri: str
    structure: Structure
    label: str
    names: tuple[str, ...]  # the given names that parse to the structure
    formula: str | None  # the stated formula that agrees, if that is the evidence
    evidence: str
    paper: str
    entity: str

    def candidate(self) -> Candidate:
        return Candidate(iri=self.iri, label=self.label, score=100.0, method=METHOD,
                         matched=self.structure.inchikey, agrees=True)


def minted_iri(inchikey: str) -> str:
    return MINTED_BASE + inchikey


def formulas_agree(parsed: str, stated: str) -> bool:
    """The parsed Hill formula equals a stated formula, with or without the stated hydrate's
    water."""
    mine = _counts(parsed)
    spellings = {stated, _HYDRATE_WATER.sub("", stated.strip())}
    return mine is not None and any(_counts(f) == mine for s in spellings
                                    if (f := hill_formula(s)))


def _counts(formula: str) -> tuple[Counter[str], str] | None:
    """Element counts and charge of a Hill formula (any element order)."""
    charge = CHARGED.search(formula)
    body = formula[:charge.start()] if charge else formula
    if "".join(s + n for s, n in _ELEMENT.findall(body)) != body:
        return None
    counts: Counter[str] = Counter()
    for symbol, n in _ELEMENT.findall(body):
        counts[symbol] += int(n or 1)
    return counts, charge.group(0) if charge else ""


def stated_formulas(names: Sequence[str]) -> list[str]:
    """The names of an entity that are formulas (its stated formula)."""
    return [n for n in names if hill_formula(_HYDRATE_WATER.sub("", n.strip()))]


def stated_parent(structure: Structure, stated: Sequence[str]) -> Structure:
    """The neutral parent of a parsed ion when a stated formula is the parent's ("2-amino-1,4-
    benzenedicarboxylate" with C8H7NO4 is the acid), else the structure itself."""
    parent = uncharged(structure) if CHARGED.search(structure.formula) else None
    agrees = parent is not None and any(formulas_agree(parent.formula, f) for f in stated)
    return parent if agrees else structure


def evidence(resolution: Resolution, stated: Sequence[str]) -> tuple[str, str | None] | None:
    """Why the names' structure may be minted (and the agreeing formula), or None."""
    structure = resolution.structure
    if structure is None or any(_UNLOCATED_HYDRO.search(n) for n in resolution.agreeing):
        return None  # OPSIN guesses where unlocated hydro prefixes go: maybe another isomer
    for formula in stated:
        if formulas_agree(structure.formula, formula):
            return f"stated formula {formula} equals the parsed formula {structure.formula}", \
                formula
    spellings = {squeeze(p.parsed.lower()) for p in resolution.parsed
                 if p.structure.inchikey == structure.inchikey}
    if len(spellings) >= 2:
        return f"{len(spellings)} differently spelled names parse to {structure.inchikey}", None
    return None


class Minter:
    """Proposes minted species for entities no tier grounds, and writes them."""

    def __init__(self, matcher: Matcher, opsin: Opsin, reference: Path | None = None, *,
                 endpoint: str | None = None, dry_run: bool = False) -> None:
        self.matcher = matcher
        self.opsin = opsin
        self.reference, self.endpoint = reference, endpoint  # written into: a folder or a URL
        self.dry_run = dry_run
        self.written: list[Minted] = []  # species newly written by this minter
        self.known: dict[str, Minted] = {}  # InChIKey -> species minted in this run
        self._store: GraphStore | None = None

    def mint(self, paper: str, entity: str, names: Sequence[str]) -> Candidate | None:
        """The minted species of an entity no tier grounds (written unless a dry run)."""
        minted = self.propose(paper, entity, names)
        if minted is None:
            return None
        if not self.dry_run and self.write(minted):
            self.written.append(minted)
        return minted.candidate()

    def propose(self, paper: str, entity: str, names: Sequence[str]) -> Minted | None:
        stated = stated_formulas(names)
        words = [n for n in names if n not in stated]
        resolution = resolve(self.opsin, words)
        if resolution.structure is not None:
            resolution = resolution.model_copy(update={
                "structure": stated_parent(resolution.structure, stated)})
        found = evidence(resolution, stated)
        key = resolution.structure.inchikey if resolution.structure else ""
        if key in self.known:  # minted from an earlier entity of this run
            return self.known[key].model_copy(update={"paper": paper, "entity": entity})
        if found is None or self.matcher.lookup_identifier("inchikey", key) or any(
                self._labelled(n) for n in words):
            return None  # no agreeing evidence, the reference has the structure (the
            # structure tier) or a label the names match exactly (a species to choose by hand)
        reason, formula = found
        minted = Minted(iri=minted_iri(key), structure=resolution.structure,
                        label=resolution.agreeing[0], names=resolution.agreeing,
                        formula=formula, evidence=reason, paper=paper, entity=entity)
        self.known[key] = minted
        return minted

    def _labelled(self, name: str) -> bool:
        try:
            found = self.matcher.lookup(name)
        except InputError:
            return False
        return any(c.method in EXACT_METHODS for c in found.candidates)

    def write(self, minted: Minted) -> bool:
        """Add the species and its provenance record in one transaction, through the store's
        own import (staged on a remote store); False if the record is there already."""
        if self._store is None:
            self._store = open_store(path=self.reference, endpoint=self.endpoint)
        quads = list(minted_quads(minted))
        record = next(q.object for q in quads if q.predicate == GENERATED_BY)
        if list(self._store.query(RECORDED, bindings={
                "g": MINTED_GRAPH, "s": NamedNode(minted.iri), "generated": GENERATED_BY,
                "r": record, "used": USED, "e": NamedNode(minted.entity)})):
            return False
        self._store.import_quads(quads)
        return True

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def versions() -> dict[str, str]:
    from rdkit import __version__ as rdkit_version

    return {"opsinVersion": opsin_jar().stem.removesuffix("-jar-with-dependencies"),
            "rdkitVersion": rdkit_version}


def minted_quads(minted: Minted) -> Iterator[Quad]:
    """The species (its own named graph) and the provenance record of one entity."""
    s = NamedNode(minted.iri)
    g = MINTED_GRAPH
    yield Quad(s, RDF_TYPE, OS_SPECIES, g)
    yield Quad(s, RDFS_LABEL, Literal(minted.label), g)
    for name in minted.names[1:]:
        yield Quad(s, SKOS_ALT, Literal(name), g)
    values = {"inchikey": minted.structure.inchikey, "inchi": minted.structure.inchi,
              "smiles": minted.structure.smiles, "formula": minted.structure.formula}
    for field, value in values.items():
        prop, cls = IDENTIFIER_NODES[field]
        node = NamedNode(f"{minted.iri}/{cls.rsplit('#', 1)[-1]}")
        yield Quad(s, NamedNode(prop), node, g)
        yield Quad(node, RDF_TYPE, NamedNode(cls), g)
        yield Quad(node, OS_VALUE, Literal(value), g)
    key = hashlib.sha256(f"{minted.paper}\n{minted.entity}".encode()).hexdigest()[:16]
    record = NamedNode(f"{minted.iri}/minting/{key}")
    yield Quad(s, GENERATED_BY, record, g)
    yield Quad(record, RDF_TYPE, NamedNode(PROV + "Activity"), g)
    yield Quad(record, USED, NamedNode(minted.entity), g)
    yield Quad(record, NamedNode(KGREF + "paper"), Literal(minted.paper), g)
    for name in minted.names:
        yield Quad(record, NamedNode(KGREF + "fromName"), Literal(name), g)
    if minted.formula:
        yield Quad(record, NamedNode(KGREF + "statedFormula"), Literal(minted.formula), g)
    yield Quad(record, NamedNode(KGREF + "evidence"), Literal(minted.evidence), g)
    for prop, value in versions().items():
        yield Quad(record, NamedNode(KGREF + prop), Literal(value), g)
