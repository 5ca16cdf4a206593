"""The MOP-30 ground truth written as one OntoSyn graph per paper: a realistic 30-paper store.

Used by the load benchmark and the demo page until extracted graphs exist. Syntheses, their
single product (label, CCDC number), ordered typed steps, step-local chemical inputs (label,
amount) and durations/temperatures as OM-2 quantities; IRIs are minted deterministically.

>>> quads = mop30_quads()
>>> len({q.graph_name for q in quads}), len(quads) > 5_000
(30, True)
>>> quantity("2.5 h", DURATION_UNITS)
(2.5, 'hour')
>>> quantity("N/A", DURATION_UNITS) is None
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from pyoxigraph import Literal, NamedNode, Quad

from kgctl.assets import asset_dir
from kgctl.store.iris import graph_iri, mint_iri, paper_id

ONTOSYN = "https://www.theworldavatar.com/kg/OntoSyn/"
ONTOMOPS = "https://www.theworldavatar.com/kg/ontomops/"
OM2 = "http://www.ontology-of-units-of-measure.org/resource/om-2/"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
RDFS_COMMENT = NamedNode("http://www.w3.org/2000/01/rdf-schema#comment")
DURATION_UNITS = {"min": "minute", "minute": "minute", "minutes": "minute", "h": "hour",
                  "hour": "hour", "hours": "hour", "hr": "hour", "d": "day", "day": "day",
                  "days": "day", "s": "second-Time", "sec": "second-Time"}
TEMPERATURE_UNITS = {"°c": "degreeCelsius", "c": "degreeCelsius", "k": "kelvin"}
_QUANTITY = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([^\d\s].*?)\s*$")
_HASH_NAME = re.compile(r"^[0-9a-f]{40}$")


def syn(name: str) -> NamedNode:
    return NamedNode(ONTOSYN + name)


def quantity(text: str | None, units: dict[str, str]) -> tuple[float, str] | None:
    """(value, OM-2 unit local name) of a text like ``"24 h"``; None when not a quantity."""
    match = _QUANTITY.match(text or "")
    if not match or match.group(2).lower() not in units:
        return None
    return float(match.group(1)), units[match.group(2).lower()]


def mop30_quads() -> list[Quad]:
    """All quads of the 30 paper graphs built from ``benchmarks/mop30/steps``."""
    quads: list[Quad] = []
    for path in sorted((asset_dir("benchmarks") / "mop30" / "steps").glob("*.json")):
        pid = paper_id(path.stem)
        graph = graph_iri(pid)
        syntheses = json.loads(path.read_text(encoding="utf-8"))["Synthesis"]
        for number, synthesis in enumerate(syntheses, start=1):
            quads.extend(Quad(s, p, o, graph)
                         for s, p, o in _synthesis_triples(pid, number, synthesis))
    return quads


def _synthesis_triples(pid: str, number: int, synthesis: dict) -> Iterator[tuple]:
    key = f"synthesis {number}"
    node = mint_iri(pid, ONTOSYN + "ChemicalSynthesis", key)
    names = [n for n in synthesis.get("productNames", []) if not _HASH_NAME.match(n)]
    product = mint_iri(pid, ONTOSYN + "ChemicalOutput", key)
    yield node, RDF_TYPE, syn("ChemicalSynthesis")
    yield node, RDFS_LABEL, Literal(f"Synthesis of {names[0] if names else key}")
    yield node, syn("hasChemicalOutput"), product
    yield product, RDF_TYPE, syn("ChemicalOutput")
    if names:
        yield product, RDFS_LABEL, Literal(names[0])
        for alias in names[1:]:
            yield product, syn("hasAlternativeNames"), Literal(alias)
    ccdc = str(synthesis.get("productCCDCNumber") or "").strip()
    if ccdc and ccdc.upper() != "N/A":
        yield product, NamedNode(ONTOMOPS + "hasCCDCNumber"), Literal(ccdc)
    for entry in synthesis["steps"]:
        for kind, fields in entry.items():
            yield from _step_triples(pid, key, node, kind, fields)


def _step_triples(pid: str, key: str, synthesis: NamedNode, kind: str, fields: dict
                  ) -> Iterator[tuple]:
    order = int(fields["stepNumber"])
    step_key = f"{key} step {order}"
    step = mint_iri(pid, ONTOSYN + kind, step_key)
    yield synthesis, syn("hasSynthesisStep"), step
    yield step, RDF_TYPE, syn(kind)
    yield step, syn("hasOrder"), Literal(order)
    if fields.get("comment"):
        yield step, RDFS_COMMENT, Literal(fields["comment"])
    measured = [("hasStepDuration", "Duration", fields.get("duration"), DURATION_UNITS),
                ("hasTargetTemperature", "Temperature", fields.get("targetTemperature"),
                 TEMPERATURE_UNITS)]
    for prop, om_class, text, units in measured:
        found = quantity(text, units)
        if found is not None:
            node = mint_iri(pid, OM2 + om_class, f"{step_key} {prop}")
            yield step, syn(prop), node
            yield node, RDF_TYPE, NamedNode(OM2 + om_class)
            yield node, NamedNode(OM2 + "hasNumericalValue"), Literal(found[0])
            yield node, NamedNode(OM2 + "hasUnit"), NamedNode(OM2 + found[1])
    for index, added in enumerate(fields.get("addedChemical") or [], start=1):
        names = added.get("chemicalName") or []
        if not names:
            continue
        chemical = mint_iri(pid, ONTOSYN + "ChemicalInput", f"{step_key} input {index}")
        yield step, syn("hasAddedChemicalInput"), chemical
        yield chemical, RDF_TYPE, syn("ChemicalInput")
        yield chemical, RDFS_LABEL, Literal(names[0])
        for alias in names[1:]:
            yield chemical, syn("hasAlternativeNames"), Literal(alias)
        if added.get("chemicalAmount") and added["chemicalAmount"].upper() != "N/A":
            yield chemical, syn("hasAmount"), Literal(added["chemicalAmount"])
