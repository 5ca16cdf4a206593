"""The merged triples of several T-Boxes, indexed by subject, with the file each came from.

Reading OWL needs little more than "objects of (s, p)" and RDF lists, so a dictionary index
is both simpler and faster than a store. Blank nodes never leave this module as identifiers.

>>> import pyoxigraph as ox
>>> from kgctl.ontology.rdf_files import TBoxFile
>>> ex = "http://example.org/"
>>> t = ox.Triple(ox.NamedNode(ex + "A"), ox.NamedNode(RDFS + "label"), ox.Literal("A thing"))
>>> graph = TBoxGraph([TBoxFile("a.ttl", (t,), {})])
>>> graph.literal(ex + "A", RDFS + "label"), graph.file_of(ex + "A")
('A thing', 'a.ttl')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyoxigraph as ox

from kgctl.ontology.rdf_files import TBoxFile

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = RDF + "type"
LABEL_LANGUAGES = ("en", "")  # default preferred label/comment languages: English first

Key = str  # an IRI, or "_:" + blank node id


def key(term: ox.NamedNode | ox.BlankNode | ox.Literal) -> Key:
    """Index key of a subject-like term."""
    return term.value if isinstance(term, ox.NamedNode) else f"_:{term.value}"


def is_blank(k: Key) -> bool:
    return k.startswith("_:")


class TBoxGraph:
    """Subject -> predicate -> objects (document order, no duplicates), across files."""

    def __init__(self, files: Sequence[TBoxFile], *,
                 languages: tuple[str, ...] = LABEL_LANGUAGES) -> None:
        self.files = tuple(f.name for f in files)
        self.languages = languages
        self._index: dict[Key, dict[str, list[ox.NamedNode | ox.BlankNode | ox.Literal]]] = {}
        self._file: dict[Key, str] = {}  # first file that says something about the subject
        self._typed_in: dict[tuple[Key, str], str] = {}  # (subject, rdf:type) -> first file
        self._reverse: dict[tuple[str, Key], list[Key]] = {}  # (predicate, object) -> subjects
        for tbox in files:
            for triple in tbox.triples:
                subject = key(triple.subject)
                predicate = triple.predicate.value
                objects = self._index.setdefault(subject, {}).setdefault(predicate, [])
                if triple.object not in objects:
                    objects.append(triple.object)
                    if not isinstance(triple.object, ox.Literal):
                        self._reverse.setdefault((predicate, key(triple.object)), []).append(
                            subject
                        )
                self._file.setdefault(subject, tbox.name)
                if predicate == RDF_TYPE and isinstance(triple.object, ox.NamedNode):
                    self._typed_in.setdefault((subject, triple.object.value), tbox.name)

    def subjects(self) -> Iterator[Key]:
        return iter(self._index)

    def objects(
        self, subject: Key, predicate: str
    ) -> list[ox.NamedNode | ox.BlankNode | ox.Literal]:
        return self._index.get(subject, {}).get(predicate, [])

    def object_keys(self, subject: Key, predicate: str) -> list[Key]:
        """Objects that are nodes (not literals), as keys."""
        return [key(o) for o in self.objects(subject, predicate) if not isinstance(o, ox.Literal)]

    def named(self, subject: Key, predicate: str) -> list[str]:
        """IRIs among the objects, sorted."""
        return sorted(
            o.value for o in self.objects(subject, predicate) if isinstance(o, ox.NamedNode)
        )

    def types(self, subject: Key) -> set[str]:
        return set(self.named(subject, RDF_TYPE))

    def subjects_with(self, predicate: str, obj: Key) -> list[Key]:
        """Subjects of (?, predicate, obj), sorted."""
        return sorted(set(self._reverse.get((predicate, obj), ())))

    def subjects_of_type(self, *classes: str) -> list[Key]:
        """Subjects typed with any of `classes`, sorted."""
        return sorted({s for c in classes for s in self._reverse.get((RDF_TYPE, c), ())})

    def file_of(self, subject: Key) -> str:
        return self._file.get(subject, "")

    def declared_in(self, subject: Key, classes: Iterable[str]) -> str:
        """First file (load order) that types `subject` with one of `classes`."""
        found = [self._typed_in[(subject, c)] for c in classes if (subject, c) in self._typed_in]
        return min(found, key=self.files.index) if found else self.file_of(subject)

    def literals(self, subject: Key, predicate: str) -> list[ox.Literal]:
        return [o for o in self.objects(subject, predicate) if isinstance(o, ox.Literal)]

    def literal(self, subject: Key, predicate: str) -> str:
        """One literal value (preferring untagged, then English), or ""."""
        texts = self.texts(subject, predicate)
        return texts[0] if texts else ""

    def texts(self, subject: Key, predicate: str) -> list[str]:
        """All literal values of the preferred language, in document order."""
        values = self.literals(subject, predicate)
        for lang in self.languages:
            chosen = [v.value for v in values if (v.language or "") == lang]
            if chosen:
                return chosen
        return [v.value for v in values]

    def rdf_list(self, head: Key) -> list[ox.NamedNode | ox.BlankNode | ox.Literal]:
        """Members of an RDF collection (cycle-safe)."""
        members: list[ox.NamedNode | ox.BlankNode | ox.Literal] = []
        seen: set[Key] = set()
        while head != RDF + "nil" and head not in seen:
            seen.add(head)
            members.extend(self.objects(head, RDF + "first"))
            rest = self.object_keys(head, RDF + "rest")
            if not rest:
                break
            head = rest[0]
        return members
