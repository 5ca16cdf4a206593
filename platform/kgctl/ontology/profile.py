"""Profiles: the YAML beside a T-Box for the rules its text states only in prose.

Every rule keeps its source line. Names are CURIEs (prefixes of the T-Boxes or the profile's own
``prefixes:``) or full IRIs; unknown keys are errors, so a typo never silently drops a rule.
Checking that the names exist is done later, against the loaded T-Boxes.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "x.profile.yaml"
>>> _ = path.write_text("top_level: [ex:A]\\nclasses:\\n  ex:A:\\n    max_one: [ex:p]\\n")
>>> profile = read_profile(path, {"ex": "http://example.org/"})
>>> profile.top_level[0].iri, str(profile.top_level[0].source)
('http://example.org/A', 'x.profile.yaml:1')
>>> rule = profile.cardinalities[0]
>>> (rule.on_property, rule.min, rule.max, str(rule.source))
('http://example.org/p', 0, 1, 'x.profile.yaml:4')
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml

from kgctl.errors import InputError, OntologyError
from kgctl.ontology.ir import Frozen, Source, ToolServerInfo, UnitAlias
from kgctl.ontology.tool_servers import read_tool_servers

PROFILE_SUFFIX = ".profile.yaml"
# list key -> (min, max) of the cardinality rule it states
CARDINALITY_KEYS: dict[str, tuple[int, int | None]] = {
    "exactly_one": (1, 1),
    "required": (1, None),
    "max_one": (0, 1),
}
TOP_KEYS = ("prefixes", "top_level", "classes", "orderings", "quantities", "unit_aliases",
            "tool_servers", "existentials")
# how OWL someValuesFrom / min-cardinality axioms apply when an entity is created
EXISTENTIALS = ("soft", "hard")
CLASS_KEYS = ("abstract", "standalone", "identity", "key", "verify", "allowed_values",
              *CARDINALITY_KEYS)
ORDERING_KEYS = ("container", "member", "order", "start", "contiguous")
QUANTITY_KEYS = ("value_property", "unit_property", "kinds")
KIND_KEYS = ("units", "minimum")  # a kind written as a mapping instead of its unit category
IDENTITIES = ("occurrence", "label")


class Named(Frozen):
    iri: str
    source: Source


class ClassFlag(Frozen):
    iri: str
    abstract: bool | None = None
    standalone: bool | None = None
    identity: Literal["occurrence", "label"] | None = None
    key: str | None = None  # natural key property; implies identity "label"
    key_source: Source | None = None
    verify: str | None = None
    source: Source


class CardinalityRule(Frozen):
    on_class: str
    on_property: str
    min: int
    max: int | None
    source: Source


class ValuesRule(Frozen):
    on_class: str
    on_property: str
    values: tuple[str, ...]  # as written (literals, e.g. labels)
    iris: tuple[str, ...] | None  # the same expanded as IRIs, None if one is not an IRI/CURIE
    source: Source


class OrderingEntry(Frozen):
    container: str
    member: str
    order: str
    start: int = 1
    contiguous: bool = True
    source: Source


class QuantityEntry(Frozen):
    quantity: str
    unit_category: str
    value_property: str
    unit_property: str
    minimum: float | None = None
    source: Source


class Profile(Frozen):
    file: str
    top_level: tuple[Named, ...] = ()
    flags: tuple[ClassFlag, ...] = ()
    cardinalities: tuple[CardinalityRule, ...] = ()
    values: tuple[ValuesRule, ...] = ()
    orderings: tuple[OrderingEntry, ...] = ()
    quantities: tuple[QuantityEntry, ...] = ()
    unit_aliases: tuple[UnitAlias, ...] = ()
    tool_servers: tuple[ToolServerInfo, ...] = ()
    prefixes: dict[str, str] = {}
    existentials: Literal["soft", "hard"] | None = None


def profile_beside(tbox: Path) -> Path:
    """``X.profile.yaml`` for ``X.ttl``."""
    return tbox.with_name(tbox.stem + PROFILE_SUFFIX)


def read_profile(path: Path, prefixes: dict[str, str]) -> Profile:
    """Parse a profile file; CURIEs resolve against `prefixes` plus the file's own."""
    if not path.is_file():
        raise InputError(f"no such profile file: {path}")
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{mark.line + 1}:{mark.column + 1}: " if mark else ""
        raise OntologyError(f"{path.name}:{where}YAML syntax error: {exc.problem}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise OntologyError(f"{path.name}: cannot read profile: {exc}") from None
    return _Reader(path.name, prefixes).profile(root)


class _Reader:
    """Walks the YAML node tree so every value keeps its line number."""

    def __init__(self, file: str, prefixes: dict[str, str]) -> None:
        self.file = file
        self.prefixes = dict(prefixes)

    def profile(self, root: yaml.Node | None) -> Profile:
        if root is None:
            return Profile(file=self.file)
        top = self.mapping(root, TOP_KEYS, "profile")
        declared = self.mapping(top["prefixes"], None, "prefixes") if "prefixes" in top else {}
        own = {self.scalar(k): self.scalar(v) for k, v in declared.items()}
        self.prefixes.update(own)
        flags, cards, values = self.classes(top.get("classes"))
        return Profile(
            file=self.file,
            prefixes=own,
            top_level=tuple(
                Named(iri=self.iri(n), source=self.source(n))
                for n in self.sequence(top.get("top_level"))
            ),
            flags=flags,
            cardinalities=cards,
            values=values,
            orderings=tuple(self.ordering(n) for n in self.sequence(top.get("orderings"))),
            quantities=self.quantities(top.get("quantities")),
            unit_aliases=tuple(
                UnitAlias(spelling=self.scalar(k), unit=self.iri(v), source=self.source(k))
                for k, v in (self.mapping(top["unit_aliases"], None, "unit_aliases").items()
                             if "unit_aliases" in top else ())
            ),
            tool_servers=read_tool_servers(self, top.get("tool_servers")),
            existentials=(self.choice(top["existentials"], EXISTENTIALS)
                          if "existentials" in top else None),
        )

    def classes(self, node: yaml.Node | None):
        flags: list[ClassFlag] = []
        cards: list[CardinalityRule] = []
        values: list[ValuesRule] = []
        for name, body in self.mapping(node, None, "classes").items() if node else ():
            cls = self.iri(name)
            rules = self.mapping(body, CLASS_KEYS, f"class {self.scalar(name)}")
            if {"abstract", "standalone", "identity", "key", "verify"} & set(rules):
                identity = (self.choice(rules["identity"], IDENTITIES) if "identity" in rules
                            else None)
                key = rules.get("key")
                if key is not None and identity == "occurrence":
                    raise self.error(key, "a key identifies reused nodes; it cannot go with "
                                     "identity: occurrence")
                flags.append(
                    ClassFlag(
                        iri=cls,
                        abstract=self.boolean(rules["abstract"]) if "abstract" in rules else None,
                        standalone=(self.boolean(rules["standalone"]) if "standalone" in rules
                                    else None),
                        identity="label" if key is not None else identity,
                        key=self.iri(key) if key is not None else None,
                        key_source=self.source(key) if key is not None else None,
                        verify=self.text(rules["verify"]) if "verify" in rules else None,
                        source=self.source(name),
                    )
                )
            for key_name, (low, high) in CARDINALITY_KEYS.items():
                for prop in self.sequence(rules.get(key_name)):
                    cards.append(
                        CardinalityRule(
                            on_class=cls,
                            on_property=self.iri(prop),
                            min=low,
                            max=high,
                            source=self.source(prop),
                        )
                    )
            allowed = (
                self.mapping(rules["allowed_values"], None, "allowed_values")
                if "allowed_values" in rules
                else {}
            )
            for prop, listed in allowed.items():
                items = tuple(self.scalar(v) for v in self.sequence(listed))
                if not items:
                    raise self.error(listed, "allowed_values needs a non-empty list")
                iris = tuple(expand(v, self.prefixes) or "" for v in items)
                values.append(
                    ValuesRule(
                        on_class=cls,
                        on_property=self.iri(prop),
                        values=items,
                        iris=iris if all(iris) else None,
                        source=self.source(prop),
                    )
                )
        return tuple(flags), tuple(cards), tuple(values)

    def ordering(self, node: yaml.Node) -> OrderingEntry:
        body = self.mapping(node, ORDERING_KEYS, "ordering")
        for required in ("container", "member", "order"):
            if required not in body:
                raise self.error(node, f"ordering needs {required!r}")
        return OrderingEntry(
            container=self.iri(body["container"]),
            member=self.iri(body["member"]),
            order=self.iri(body["order"]),
            start=self.integer(body["start"]) if "start" in body else 1,
            contiguous=self.boolean(body["contiguous"]) if "contiguous" in body else True,
            source=self.source(node),
        )

    def quantities(self, node: yaml.Node | None) -> tuple[QuantityEntry, ...]:
        if node is None:
            return ()
        body = self.mapping(node, QUANTITY_KEYS, "quantities")
        for required in QUANTITY_KEYS:
            if required not in body:
                raise self.error(node, f"quantities needs {required!r}")
        value_prop, unit_prop = self.iri(body["value_property"]), self.iri(body["unit_property"])
        entries = []
        for q, kind in self.mapping(body["kinds"], None, "kinds").items():
            units, minimum = kind, None
            if isinstance(kind, yaml.MappingNode):
                spec = self.mapping(kind, KIND_KEYS, f"kind {self.scalar(q)}")
                if "units" not in spec:
                    raise self.error(kind, "a quantity kind needs 'units' (its unit category)")
                units = spec["units"]
                minimum = self.number(spec["minimum"]) if "minimum" in spec else None
            entries.append(QuantityEntry(
                quantity=self.iri(q),
                unit_category=self.iri(units),
                value_property=value_prop,
                unit_property=unit_prop,
                minimum=minimum,
                source=self.source(q),
            ))
        return tuple(entries)

    # -- node helpers -------------------------------------------------------------------------

    def source(self, node: yaml.Node) -> Source:
        return Source(kind="profile", file=self.file, line=node.start_mark.line + 1)

    def error(self, node: yaml.Node, message: str) -> OntologyError:
        return OntologyError(f"{self.file}:{node.start_mark.line + 1}: {message}")

    def mapping(self, node: yaml.Node, allowed: tuple[str, ...] | None, what: str):
        """Key text -> value node, or key node -> value node when `allowed` is None (free keys
        keep their line for later messages)."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping")
        out: dict = {}
        for key_node, value_node in node.value:
            name = self.scalar(key_node)
            if allowed is not None and name not in allowed:
                raise self.error(
                    key_node,
                    f"unknown key {name!r} in {what} (expected one of: {', '.join(allowed)})",
                )
            if allowed is None:
                out[key_node] = value_node
            else:
                out[name] = value_node
        return out

    def sequence(self, node: yaml.Node | None) -> list[yaml.Node]:
        if node is None:
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, "expected a list")
        return list(node.value)

    def scalar(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, "expected a single value")
        return str(node.value)

    def text(self, node: yaml.Node) -> str:
        """A non-empty prose value: one rule per line, each line's spacing collapsed."""
        lines = (" ".join(line.split()) for line in self.scalar(node).splitlines())
        text = "\n".join(line for line in lines if line)
        if not text:
            raise self.error(node, "expected a non-empty text")
        return text

    def boolean(self, node: yaml.Node) -> bool:
        text = self.scalar(node).lower()
        if text not in ("true", "false"):
            raise self.error(node, f"expected true or false, got {text!r}")
        return text == "true"

    def integer(self, node: yaml.Node) -> int:
        text = self.scalar(node)
        if not text.lstrip("-").isdigit():
            raise self.error(node, f"expected an integer, got {text!r}")
        return int(text)

    def number(self, node: yaml.Node) -> float:
        text = self.scalar(node)
        try:
            return float(text)
        except ValueError:
            raise self.error(node, f"expected a number, got {text!r}") from None

    def choice(self, node: yaml.Node, options: tuple[str, ...]) -> str:
        text = self.scalar(node)
        if text not in options:
            raise self.error(node, f"expected one of {', '.join(options)}, got {text!r}")
        return text

    def iri(self, node: yaml.Node) -> str:
        text = self.scalar(node)
        iri = expand(text, self.prefixes)
        if iri is None:
            raise self.error(node, f"unknown prefix in {text!r}; declare it under 'prefixes:'")
        return iri


def expand(text: str, prefixes: dict[str, str]) -> str | None:
    """A CURIE expanded, a full IRI (``<...>`` or with ``://``) as is, else None.

    >>> expand("ex:A", {"ex": "http://example.org/"}), expand("<urn:x>", {}), expand("N2", {})
    ('http://example.org/A', 'urn:x', None)
    """
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        return text[1:-1]
    if "://" in text or text.startswith("urn:"):
        return text
    prefix, sep, local = text.partition(":")
    return prefixes[prefix] + local if sep and prefix in prefixes else None
