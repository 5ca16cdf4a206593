"""T-Boxes + profiles -> OntologyIR: the compile pipeline of the ontology front end.

>>> ir = pack_ir("nerre-doping")
>>> ir.top_level
('https://w3id.org/kgctl/domains/nerre-doping#Sentence',)
>>> ir.classes[ir.prefixes["dop"] + "Sentence"].key == ir.prefixes["dop"] + "sentenceNumber"
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from kgctl.errors import InputError
from kgctl.ontology import rules
from kgctl.ontology.graph import LABEL_LANGUAGES, OWL, RDF, RDFS, XSD, TBoxGraph
from kgctl.ontology.imports import follow_imports
from kgctl.ontology.ir import OntologyIR
from kgctl.ontology.owl import read_owl
from kgctl.ontology.profile import Profile, profile_beside, read_profile
from kgctl.ontology.quantities import (
    aliases_beside,
    profile_aliases,
    quantity_kinds,
    read_aliases,
    split_aliases,
)
from kgctl.ontology.rdf_files import read_tbox
from kgctl.ontology.tool_servers import check_tool_servers
from kgctl.packs import load_pack

STANDARD_PREFIXES = {"rdf": RDF, "rdfs": RDFS, "owl": OWL, "xsd": XSD}

PathLike = str | Path


def load_ir(
    ontology_paths: Iterable[PathLike], *, profile_paths: Iterable[PathLike] | None = None,
    imports: Iterable[PathLike] = (), ignore_imports: Iterable[str] = (),
    languages: Sequence[str] = LABEL_LANGUAGES,
) -> OntologyIR:
    """Compile T-Boxes (Turtle, RDF/XML, ...) and their profiles into the IR.

    With `profile_paths` None, ``X.profile.yaml`` beside each ``X.ttl`` is used when present;
    pass an empty list to compile the axioms alone. ``owl:imports`` are followed from local
    files only: `imports` are catalogs or folders searched before the importing file's own
    folder; an import whose IRI starts with one of `ignore_imports` is skipped. `languages`
    orders the label languages preferred ("" = untagged).
    """
    paths = _unique(ontology_paths)
    if not paths:
        raise InputError("no ontology file given")
    tboxes = [read_tbox(p) for p in paths]
    tboxes += follow_imports(tboxes, paths, search=[Path(p) for p in imports],
                             ignore=tuple(ignore_imports))
    graph = TBoxGraph(tboxes, languages=tuple(languages))
    owl = read_owl(graph)
    prefixes = dict(STANDARD_PREFIXES)
    for tbox in tboxes:
        for prefix, namespace in tbox.prefixes.items():
            prefixes.setdefault(prefix, namespace)

    _name_namespaces(prefixes, owl)
    if profile_paths is None:
        found = [profile_beside(p) for p in paths]
        profile_paths = [p for p in found if p.is_file()]
    profiles = [read_profile(p, prefixes) for p in _unique(profile_paths)]
    for profile in profiles:
        for prefix, namespace in profile.prefixes.items():
            prefixes.setdefault(prefix, namespace)
    curie = OntologyIR(prefixes=prefixes).curie

    classes = rules.with_ancestors(owl.classes)
    for profile in profiles:
        rules.check_names(profile, classes, owl.properties, curie)
    classes = rules.apply_flags(classes, profiles, curie)
    restrictions = sorted(
        [
            *owl.restrictions,
            *(r for p in profiles for r in rules.profile_restrictions(p.cardinalities)),
        ],
        key=rules.restriction_key,
    )
    quantities, units = quantity_kinds(graph, classes, profiles)
    spellings, added = profile_aliases(profiles, _aliases(paths, graph, units), units)
    folded, cased = split_aliases(spellings)

    existentials = "hard" if any(p.existentials == "hard" for p in profiles) else "soft"
    ir = OntologyIR(
        existentials=existentials,
        ontologies=tuple(t.name for t in tboxes),
        prefixes=dict(sorted(prefixes.items())),
        top_level=_top_level(profiles),
        classes=dict(sorted(classes.items())),
        properties=dict(sorted(owl.properties.items())),
        restrictions=tuple(restrictions),
        cardinalities=rules.merge_cardinalities(classes, owl.properties, restrictions, curie,
                                                hard_owl=existentials == "hard"),
        enumerations=rules.merge_enumerations(
            owl.enumerations, profiles, classes, owl.properties, curie
        ),
        orderings=rules.orderings(profiles),
        quantities=quantities,
        units=units,
        unit_aliases=folded,
        unit_spellings=cased,
        profile_unit_aliases=added,
        individuals={k: v for k, v in sorted(owl.individuals.items()) if k not in units},
        tool_servers=check_tool_servers(profiles, classes, curie),
    )
    rules.check_keys(ir)
    return ir


def default_ir() -> OntologyIR:
    """The T-Boxes of the default domain pack with their profiles."""
    return pack_ir(None)


def pack_ir(domain: str | Path | None) -> OntologyIR:
    """The IR of a domain pack (a bundled name or a folder; None: the default pack), compiled
    once per process."""
    return _pack_ir(load_pack(domain).root)


@cache
def _pack_ir(root: Path) -> OntologyIR:
    pack = load_pack(root)
    return load_ir(pack.ontology_paths(), profile_paths=pack.profile_paths())


def default_ontology_paths() -> list[Path]:
    """The T-Box files of the default domain pack, in load order."""
    return load_pack().ontology_paths()


def _name_namespaces(prefixes: dict[str, str], owl) -> None:
    """A namespace of declared terms that no file names (RDF/XML often declares none, Turtle
    often only the empty prefix) gets its last path segment as prefix (`.../ns/prov#` ->
    `prov`), else its T-Box file's stem, so prefixed names work for every term."""
    taken = {namespace for prefix, namespace in prefixes.items() if prefix}
    for term in [*owl.classes.values(), *owl.properties.values()]:
        namespace = term.iri[: len(term.iri) - len(term.name)]
        if namespace in taken or not term.ontology or not namespace.endswith(("#", "/")):
            continue
        segment = namespace.rstrip("#/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
        word = segment if re.fullmatch(r"[A-Za-z][\w-]*", segment) else term.ontology
        stem = re.sub(r"[^0-9A-Za-z]+", "_", word.rsplit(".", 1)[0]).strip("_").lower()
        prefix, n = stem or "ns", 1
        while prefix in prefixes:
            n += 1
            prefix = f"{stem}{n}"
        prefixes[prefix] = namespace
        taken.add(namespace)


def _unique(paths: Iterable[PathLike]) -> list[Path]:
    out: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.resolve() not in seen:
            seen.add(path.resolve())
            out.append(path)
    return out


def _aliases(paths: Sequence[Path], graph: TBoxGraph, units) -> dict[str, str]:
    spellings: dict[str, str] = {}
    for path in paths:
        table = aliases_beside(path)
        if table.is_file():
            for spelling, iri in read_aliases(table, graph, units).items():
                spellings.setdefault(spelling, iri)
    return spellings


def _top_level(profiles: Sequence[Profile]) -> tuple[str, ...]:
    seen: list[str] = []
    for profile in profiles:
        seen.extend(n.iri for n in profile.top_level if n.iri not in seen)
    return tuple(seen)
