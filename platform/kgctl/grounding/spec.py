"""Grounding specs: what to harvest from a reference endpoint and what to ground in the A-Box.

A spec is YAML in a domain pack's ``grounding/<name>.yaml``; CURIEs are expanded with its
``prefixes``. Identifier kinds are names the spec chooses; how names and identifier values are
normalised is the pack's ``naming`` hook (a `kgctl.grounding.normalise.Naming`), which a spec
may also name itself (``naming: module:attribute``); without either, the generic rules.

>>> spec = GroundingSpec.model_validate({
...     "name": "country", "target_class": "http://example.org/Country",
...     "labels": [{"path": ["http://www.w3.org/2000/01/rdf-schema#label"]}],
...     "identifiers": [{"kind": "iso", "path": ["http://example.org/iso"]}],
...     "thresholds": {"fuzzy_score": 95, "margin": 1, "candidates": 5}, "page_size": 1000})
>>> [f.kind for f in spec.identifiers], spec.naming
(['iso'], None)
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgctl.errors import InputError
from kgctl.packs import load_pack

IdentifierKind = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
_MAX_HOPS = 2
_IRI = re.compile(r"^[a-z][a-z0-9+.-]*:[^\s<>\"{}|\\^`]+$", re.IGNORECASE)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PathField(Frozen):
    path: tuple[str, ...] = Field(min_length=1, max_length=_MAX_HOPS)

    @field_validator("path")
    @classmethod
    def _iris(cls, path: tuple[str, ...]) -> tuple[str, ...]:
        for iri in path:
            if not _IRI.match(iri):
                raise ValueError(f"not an IRI: {iri!r}")
        return path


class LabelField(PathField):
    priority: int = 0  # lower wins a tie between entities
    split: str | None = None  # separator of several names in one literal


class IdentifierField(PathField):
    kind: IdentifierKind


class RoleRule(Frozen):
    """Entities whose first name matches `pattern` (a regular expression, searched, case
    ignored) play `role` instead of their class's role."""

    role: str = Field(min_length=1)
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {pattern!r} ({exc})") from None
        return pattern


class SourceClass(Frozen):
    """Locally minted entities to ground and where their names are; what they are in reports
    (`role`, default: the class's local name; `roles` give some entities another one).

    >>> src = SourceClass.model_validate({"class": "http://e/Input", "labels": [
    ...     {"path": ["http://e/name"]}], "role": "input",
    ...     "roles": [{"role": "mixture", "pattern": "solution"}]})
    >>> src.role_of(["Salt solution"]), src.role_of(["salt"]), src.role_of([])
    ('mixture', 'input', 'input')
    """

    cls: str = Field(alias="class")
    labels: tuple[LabelField, ...] = Field(min_length=1)
    identifiers: tuple[IdentifierField, ...] = ()
    role: str | None = None
    roles: tuple[RoleRule, ...] = ()

    def role_of(self, names: tuple[str, ...] | list[str]) -> str:
        first = names[0] if names else ""
        rule = next((r for r in self.roles if re.search(r.pattern, first, re.IGNORECASE)),
                    None)
        return rule.role if rule else self.role or re.split(r"[/#]", self.cls.rstrip("/#"))[-1]


class Thresholds(Frozen):
    fuzzy_score: float = Field(ge=0, le=100)
    margin: float = Field(ge=0, le=100)
    candidates: int = Field(ge=1, le=100)


class GroundingSpec(Frozen):
    name: str
    target_class: str
    labels: tuple[LabelField, ...] = Field(min_length=1)
    identifiers: tuple[IdentifierField, ...] = ()
    sources: tuple[SourceClass, ...] = ()
    naming: str | None = None  # hook target of the Naming (None: the generic rules)
    thresholds: Thresholds
    page_size: int = Field(ge=1, le=1_000_000)

    def fingerprint(self) -> str:
        """Stable digest of everything that shapes a harvested index."""
        payload = self.model_dump_json(
            include={"target_class", "labels", "identifiers", "naming"})
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def spec_folder(domain: str | Path | None) -> Path:
    """The grounding specs folder of a domain pack (None: the default pack)."""
    pack = load_pack(domain)
    folder = pack.part("grounding")
    if folder is None:
        raise InputError(f"domain {pack.name!r} has no grounding specs (grounding: in its "
                         "domain.yaml; `kgctl ground inspect` proposes one)")
    return folder


def load_spec(name_or_path: str | Path, *, domain: str | Path | None = None) -> GroundingSpec:
    """A spec of a domain pack by name or a spec file by path; its naming defaults to the
    pack's ``naming`` hook."""
    path = Path(name_or_path)
    if not path.suffix:
        path = spec_folder(domain) / f"{name_or_path}.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"no grounding spec {str(name_or_path)!r} ({path})") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a grounding spec is a mapping")
    prefixes = raw.pop("prefixes", {}) or {}
    if not Path(name_or_path).suffix or domain is not None:  # a pack's spec
        raw.setdefault("naming", load_pack(domain).manifest.hooks.get("naming"))
    try:
        return GroundingSpec.model_validate(_expand(raw, prefixes))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{path}: {where}: {first['msg']}") from exc


def spec_for_class(class_name: str | None, *, domain: str | Path | None = None
                   ) -> GroundingSpec:
    """The pack's spec whose target class is `class_name` (local name, CURIE or IRI); None:
    the pack's first spec by name."""
    names = sorted(p.stem for p in spec_folder(domain).glob("*.yaml"))
    if class_name is None:
        if not names:
            raise InputError("the domain pack has no grounding spec (grounding/*.yaml)")
        return load_spec(names[0], domain=domain)
    wanted = class_name.rsplit("#", 1)[-1].rsplit("/", 1)[-1].rsplit(":", 1)[-1].casefold()
    for name in names:
        spec = load_spec(name, domain=domain)
        if spec.target_class == class_name or spec.target_class.rsplit("#", 1)[-1].rsplit(
            "/", 1
        )[-1].casefold() == wanted:
            return spec
    raise InputError(f"no grounding spec for class {class_name!r}; specs: {', '.join(names)}")


def _expand(value: object, prefixes: dict[str, str]) -> object:
    """Expand CURIEs (``ex:Country``) in every string field that names an IRI."""
    if isinstance(value, dict):
        return {k: (_curie(v, prefixes) if k in ("target_class", "class") else
                    [_curie(x, prefixes) for x in v] if k == "path" and isinstance(v, list) else
                    _expand(v, prefixes)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, prefixes) for v in value]
    return value


def _curie(text: object, prefixes: dict[str, str]) -> object:
    if not isinstance(text, str) or "://" in text:
        return text
    prefix, sep, local = text.partition(":")
    if not sep:
        return text
    if prefix not in prefixes:
        raise InputError(f"unknown prefix {prefix!r} in {text!r}")
    return prefixes[prefix] + local
