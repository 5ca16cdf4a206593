"""Deterministic identity: paper ids, graph IRIs and minted instance IRIs.

IRIs come from (paper, class, natural key) only, never from clocks or random numbers.

>>> paper_id("10.1002/anie.201811027")
'10.1002_anie.201811027'
>>> paper_id("papers/10.1021_ic050460z.pdf")
'10.1021_ic050460z'
>>> graph_iri("10.1021_ic050460z").value
'https://w3id.org/kgctl/paper/10.1021_ic050460z'
>>> mint_iri("p1", "https://example.org/onto/HeatChill", "route 1 / step 3").value
'https://w3id.org/kgctl/paper/p1/HeatChill/route-1-step-3'
>>> normalise_label("  Cu(NO3)2 ·  6H2O ") == normalise_label("cu(no3)2 · 6h2o")
True
>>> normalise_key(" [Co2] ") == normalise_key("[CO2]")  # natural keys keep their case
False
>>> mint_iri("p1", "https://example.org/onto/Unit", "[Co2]", exact=True) != mint_iri(
...     "p1", "https://example.org/onto/Unit", "[CO2]", exact=True)
True
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import PurePath

from pyoxigraph import NamedNode

BASE = "https://w3id.org/kgctl/"
PAPER_BASE = BASE + "paper/"
_SAFE = re.compile(r"[^A-Za-z0-9._~-]+")
_MAX_SLUG = 80
_DOI = re.compile(r"^10\.\d{4,9}/\S+$")


def paper_id(text: str) -> str:
    """Paper id from a DOI (``/`` becomes ``_``) or a file path (its stem), made IRI-safe."""
    text = text.strip()
    if _DOI.match(text):
        raw = text.replace("/", "_")
    else:
        name = PurePath(text).name
        raw = name.rsplit(".", 1)[0] if re.search(r"\.(pdf|md|txt|json|ttl|trig)$", name) else name
    slug = _SAFE.sub("-", raw).strip("-")
    if not slug:
        raise ValueError(f"cannot make a paper id from {text!r}")
    return slug


def graph_iri(pid: str) -> NamedNode:
    """The named graph that holds one paper's facts."""
    return NamedNode(PAPER_BASE + pid)


def provenance_graph_iri(pid: str) -> NamedNode:
    """The named graph that holds one paper's provenance (PROV-O call records)."""
    return NamedNode(PAPER_BASE + pid + "/provenance")


def paper_of_graph(iri: str) -> str | None:
    """Inverse of graph_iri; None for provenance graphs and foreign graphs."""
    if not iri.startswith(PAPER_BASE):
        return None
    rest = iri[len(PAPER_BASE):]
    return rest if rest and "/" not in rest else None


def normalise_label(label: str) -> str:
    """Reuse key of a named thing within a paper: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", label).casefold().split())


def normalise_key(value: str) -> str:
    """Natural-key value (e.g. a formula): NFKC, whitespace collapsed, case kept ("CO" != "Co")."""
    return " ".join(unicodedata.normalize("NFKC", value).split())


def slug(key: str) -> str:
    """IRI-safe, readable slug of a natural key; long keys keep a prefix plus a digest."""
    text = _SAFE.sub("-", normalise_label(key)).strip("-") or "x"
    if len(text) <= _MAX_SLUG:
        return text
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"{text[:_MAX_SLUG - 13]}-{digest}"


def mint_iri(pid: str, class_iri: str, key: str, *, exact: bool = False) -> NamedNode:
    """Instance IRI from (paper, class local name, natural key). Slugs are case-folded; with
    `exact`, a key whose case matters gets a digest so that "CO" and "Co" stay apart."""
    local = re.split(r"[/#]", class_iri.rstrip("/#"))[-1]
    text = slug(key)
    if exact and key != key.casefold():
        text = f"{text}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    return NamedNode(f"{PAPER_BASE}{pid}/{local}/{text}")
