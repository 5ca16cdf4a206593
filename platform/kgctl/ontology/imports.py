"""owl:imports followed from local files only, never from the network.

Where an import is looked for, in order: the XML catalogs given (``catalog-v001.xml``, the
Protégé convention: ``<uri name="IRI" uri="local/file.ttl"/>``; entries pointing at the network
are not followed), the T-Box files given (matched by their ``owl:Ontology`` IRI or
``owl:versionIRI``), the folders given, then the folder of the importing file and its catalog.
In a folder a file matches by its name being the import IRI's last segment; no other file of a
folder is read, so an unrelated or unparsable file beside an ontology never fails its compile.
An import found nowhere is an error naming it, unless an `ignore` prefix covers it (its terms
then stay `external` in the IR).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from kgctl.errors import OntologyError
from kgctl.ontology.graph import OWL, RDF_TYPE
from kgctl.ontology.rdf_files import FORMATS, TBoxFile, read_tbox

CATALOG = "catalog-v001.xml"
IMPORTS = OWL + "imports"


def ontology_iris(tbox: TBoxFile) -> set[str]:
    """The IRIs a T-Box file answers to: its owl:Ontology IRI(s) and version IRI(s)."""
    found = {t.subject.value for t in tbox.triples
             if t.predicate.value == RDF_TYPE and t.object.value == OWL + "Ontology"}
    found |= {t.object.value for t in tbox.triples
              if t.predicate.value == OWL + "versionIRI" and t.subject.value in found}
    return found


def imported_iris(tbox: TBoxFile) -> list[str]:
    return list(dict.fromkeys(t.object.value for t in tbox.triples
                              if t.predicate.value == IMPORTS))


def follow_imports(tboxes: list[TBoxFile], paths: Sequence[Path], *,
                   search: Sequence[Path] = (), ignore: Sequence[str] = ()) -> list[TBoxFile]:
    """The T-Boxes the given ones import, transitively, each read once (load order: breadth
    first)."""
    known = {iri for t in tboxes for iri in ontology_iris(t)}
    read = {p.resolve() for p in paths}
    parsed: dict[Path, TBoxFile] = {}  # files read while looking, each parsed once
    todo = list(zip(tboxes, paths, strict=True))
    added: list[TBoxFile] = []
    while todo:
        tbox, path = todo.pop(0)
        for iri in imported_iris(tbox):
            if iri in known or any(iri.startswith(prefix) for prefix in ignore):
                continue
            found = _locate(iri, [*search, path.parent], parsed)
            if found is None:
                raise OntologyError(
                    f"{tbox.name}: owl:imports <{iri}> is in no local file (looked in "
                    f"{', '.join(str(s) for s in [*search, path.parent])}); give its file or "
                    "catalog with --imports, or skip it with --ignore-import (imports are "
                    "never fetched from the network; a folder's files match by name only)")
            known.add(iri)
            if found.resolve() in read:
                continue
            read.add(found.resolve())
            new = parsed.get(found.resolve()) or read_tbox(found)
            known |= ontology_iris(new)
            added.append(new)
            todo.append((new, found))
    return added


def _locate(iri: str, places: Sequence[Path], parsed: dict[Path, TBoxFile]) -> Path | None:
    for place in places:
        if (place.is_file() and place.suffix.lower() in FORMATS
                and not place.name.startswith("catalog")):  # a T-Box file given
            key = place.resolve()
            if key not in parsed:
                parsed[key] = read_tbox(place)
            if iri in ontology_iris(parsed[key]):
                return place
            continue
        catalog = place if place.is_file() else place / CATALOG
        if catalog.is_file():
            hit = _catalog(catalog).get(iri)
            if hit is not None and hit.is_file():
                return hit
        if place.is_dir():
            hit = _in_folder(iri, place)
            if hit is not None:
                return hit
    return None


def _catalog(path: Path) -> dict[str, Path]:
    """name -> local file of an OASIS XML catalog (network entries left out)."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise OntologyError(f"{path.name}: not a readable XML catalog: {exc}") from None
    entries: dict[str, Path] = {}
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] != "uri":
            continue
        name, target = element.get("name"), element.get("uri", "")
        if name and "://" not in target:
            entries.setdefault(name, (path.parent / target).resolve())
    return entries


def _in_folder(iri: str, folder: Path) -> Path | None:
    """The file of `folder` (or below) named after the import IRI's last segment."""
    stem = iri.rstrip("/#").rsplit("/", 1)[-1]
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in FORMATS and p.is_file()
                   and not p.name.startswith("catalog"))
    return next((p for p in files if p.stem == stem or p.name == stem), None)
