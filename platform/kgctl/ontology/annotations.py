"""What a term is called and what it says: labels, definitions, deprecation.

>>> is_opaque_name("IAO_0000032"), is_opaque_name("HeatChill")
(True, False)
"""

from __future__ import annotations

import re

from kgctl.ontology.graph import OWL, RDFS, TBoxGraph

SKOS = "http://www.w3.org/2004/02/skos/core#"
# name of a term, in order of preference (the local name when none is given)
LABELS = (RDFS + "label", SKOS + "prefLabel")
# text shown as a term's description: comments and the definitions of SKOS, OBO (IAO) and EMMO
DEFINITIONS = (
    RDFS + "comment",
    SKOS + "definition",
    "http://purl.obolibrary.org/obo/IAO_0000115",
    "https://w3id.org/emmo#EMMO_967080e5_2f42_4eb2_a3a9_c58143e835f9",
)
# schema.org-style soft signatures (SOSA/SSN): used when rdfs:domain / rdfs:range are absent
DOMAIN_INCLUDES = ("http://schema.org/domainIncludes", "https://schema.org/domainIncludes")
RANGE_INCLUDES = ("http://schema.org/rangeIncludes", "https://schema.org/rangeIncludes")


def local_name(iri: str) -> str:
    """Last segment of an IRI.

    >>> local_name("https://example.org/onto/HeatTreatment")
    'HeatTreatment'
    >>> local_name("http://example.org/o.owl#Dopant")
    'Dopant'
    """
    for sep in ("#", "/", ":"):
        if sep in iri.rstrip(sep):
            return iri.rstrip(sep).rsplit(sep, 1)[1]
    return iri


def label_of(graph: TBoxGraph, iri: str) -> str:
    """The label in the most preferred language (rdfs:label before skos:prefLabel within a
    language), else any label, else the local name."""
    found = [v for p in LABELS for v in graph.literals(iri, p)]
    for lang in graph.languages:
        for value in found:
            if (value.language or "") == lang:
                return value.value
    name = local_name(iri)
    return found[0].value if found and is_opaque_name(name) else name


def is_opaque_name(name: str) -> bool:
    """An identifier rather than a word (OBO ids, UUID-style ids); see compiler.naming."""
    return bool(re.search(r"^[A-Za-z]{1,12}[_:]?\d{4,}$|[0-9a-fA-F]{8}[_-][0-9a-fA-F]{4}[_-]|^\d+$",
                          name))


def description_of(graph: TBoxGraph, iri: str) -> str:
    return "\n\n".join(t for p in DEFINITIONS for t in graph.texts(iri, p) if t.strip())


def is_deprecated(graph: TBoxGraph, iri: str) -> bool:
    return any(v.value.strip().lower() in ("true", "1")
               for v in graph.literals(iri, OWL + "deprecated"))
