"""Domain packs: one folder per domain with everything domain-specific, read by the generic
stages through one manifest, ``domain.yaml``.

A pack names its T-Box files (in load order; profiles beside them as ``X.profile.yaml``), and
optionally: plan hints, extra section-title words for ingestion, the read-out queries with
their JSON mappings, retrieval templates and question sets, grounding specs, a dedup spec,
benchmarks (with their ground-truth traces) and hooks (``module:attribute`` names of the
domain's Python extensions, e.g. key normalisers). What a pack leaves out, the stages derive
from its T-Box and its data. The bundled packs live in ``domains/`` (a checkout) or
``kgctl/assets/domains`` (a wheel); a pack is named by its folder name or given as a path.

>>> pack = load_pack("nerre-doping")
>>> pack.name, [p.name for p in pack.ontology_paths()]
('nerre-doping', ['doping.ttl'])
>>> sorted(bundled_names())[:2]
['mop30', 'nerre-doping']
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Literal

import click
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgctl.assets import asset_dir
from kgctl.errors import InputError

MANIFEST = "domain.yaml"
DOMAIN_ENV = "KGCTL_DOMAIN"  # the pack used when a command is given no --domain


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Benchmark(Frozen):
    """A benchmark of the pack: its folder or file, how it is scored, its ground-truth traces."""

    path: str
    kind: Literal["records", "nerre"] = "records"
    traces: str | None = None  # folder of <paper>.jsonl ground-truth call traces
    papers: str | None = None  # folder of <paper>.txt texts (what `kgctl extract` reads)
    predictions: dict[str, str] = {}  # published predictions: label -> file
    provenance: str | None = None


class Manifest(Frozen):
    """``domain.yaml``: paths are relative to the pack folder."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    title: str = ""
    default: bool = False  # the pack used when no --domain is given (one bundled pack)
    ontologies: tuple[str, ...] = Field(min_length=1)
    profiles: tuple[str, ...] | None = None  # None: X.profile.yaml beside each X.ttl
    plan_hints: str | None = None
    sections: tuple[str, ...] = ()  # extra section-title words ingestion recognises
    readout: str | None = None  # folder of <category>.rq + <category>.yaml
    templates: str | None = None  # folder of retrieval templates <name>.rq
    questions: str | None = None  # folder of question sets *.yaml
    grounding: str | None = None  # folder of grounding specs <name>.yaml (+ their tables)
    dedup: str | None = None  # dedup spec YAML
    examples: str | None = None  # example queries of `kgctl serve`'s page: [{title, query}]
    tables: str | None = None  # folder of <name>.rq SELECTs: `kgctl store export --table`
    benchmarks: dict[str, Benchmark] = {}
    hooks: dict[str, str] = {}  # hook name -> "module:attribute" of a domain extension


class Pack:
    """A loaded pack: its folder and manifest, with resolved paths."""

    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root = root
        self.manifest = manifest
        self._hooks: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Pack({self.name!r}, {str(self.root)!r})"

    @property
    def name(self) -> str:
        return self.manifest.name

    def path(self, relative: str | None) -> Path | None:
        """A pack-relative path (None stays None)."""
        return None if relative is None else self.root / relative

    def ontology_paths(self) -> list[Path]:
        return [self.root / p for p in self.manifest.ontologies]

    def profile_paths(self) -> list[Path] | None:
        """The profiles named by the manifest; None: the ones beside each T-Box."""
        profiles = self.manifest.profiles
        return None if profiles is None else [self.root / p for p in profiles]

    def part(self, field: str) -> Path | None:
        """The folder or file of an optional part (readout, templates, ...), None if absent."""
        return self.path(getattr(self.manifest, field))

    def benchmark(self, name: str | None = None) -> tuple[str, Benchmark]:
        """A benchmark by name (default: the pack's first)."""
        benchmarks = self.manifest.benchmarks
        if not benchmarks:
            raise InputError(f"domain {self.name!r} has no benchmark")
        if name is None:
            name = next(iter(benchmarks))
        if name not in benchmarks:
            raise InputError(f"domain {self.name!r} has no benchmark {name!r} "
                             f"(benchmarks: {', '.join(benchmarks)})")
        return name, benchmarks[name]

    def hook(self, name: str) -> Any | None:
        """The object a hook names (imported on first use), None when the pack names none."""
        if name not in self._hooks:
            target = self.manifest.hooks.get(name)
            self._hooks[name] = None if target is None else resolve_hook(
                target, where=f"{self.name}: {name}")
        return self._hooks[name]

    def problems(self) -> list[str]:
        """Every part the manifest names that is missing on disk (one message each)."""
        m = self.manifest
        named: list[tuple[str, str | None]] = [
            *(("ontologies", p) for p in m.ontologies),
            *(("profiles", p) for p in m.profiles or ()),
            ("plan_hints", m.plan_hints), ("readout", m.readout), ("templates", m.templates),
            ("questions", m.questions), ("grounding", m.grounding), ("dedup", m.dedup),
        ]
        for key, b in m.benchmarks.items():
            named += [(f"benchmarks.{key}.path", b.path), (f"benchmarks.{key}.traces", b.traces),
                      (f"benchmarks.{key}.papers", b.papers),
                      (f"benchmarks.{key}.provenance", b.provenance),
                      *((f"benchmarks.{key}.predictions.{k}", v)
                        for k, v in b.predictions.items())]
        out = [f"{self.root / MANIFEST}: {key}: no such file or folder {rel!r}"
               for key, rel in named if rel is not None and not (self.root / rel).exists()]
        for key, target in m.hooks.items():
            try:
                resolve_hook(target, where=key)
            except InputError as exc:
                out.append(f"{self.root / MANIFEST}: hooks.{key}: {exc}")
        return out


def resolve_hook(target: str, *, where: str) -> Any:
    """The object named by "package.module:attribute"."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"{where}: a hook is 'module:attribute', not {target!r}")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{where}: cannot load hook {target!r}: {exc}") from None


def bundled_root() -> Path:
    return asset_dir("domains")


def bundled_names() -> list[str]:
    """Names of the bundled packs (folders holding a manifest)."""
    return sorted(p.parent.name for p in bundled_root().glob(f"*/{MANIFEST}"))


def default_name() -> str:
    """The pack used without --domain: $KGCTL_DOMAIN, else the bundled pack marked default."""
    return os.environ.get(DOMAIN_ENV) or _bundled_default()


@cache
def _bundled_default() -> str:
    for name in bundled_names():
        if read_manifest(bundled_root() / name).default:
            return name
    raise InputError("no default domain: give --domain NAME|PATH")


def load_pack(name_or_path: str | Path | None = None) -> Pack:
    """A bundled pack by name, or the pack in a folder (None: the default pack)."""
    return _load(str(name_or_path) if name_or_path is not None else default_name())


@cache
def _load(name_or_path: str) -> Pack:
    path = Path(name_or_path)
    if path.is_dir():
        root = path
    elif "/" in name_or_path or os.sep in name_or_path:
        raise InputError(f"no such domain folder: {name_or_path}")
    else:
        root = bundled_root() / name_or_path
        if not (root / MANIFEST).is_file():
            raise InputError(f"unknown domain {name_or_path!r} (bundled: "
                             f"{', '.join(bundled_names())}; or give a pack folder)")
    return Pack(root.resolve(), read_manifest(root))


def read_manifest(root: Path) -> Manifest:
    """The manifest of a pack folder; one error naming the first problem."""
    path = root / MANIFEST
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{root}: not a domain pack (no {MANIFEST})") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a domain manifest is a mapping")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "manifest"
        raise InputError(f"{path}: {where}: {first['msg']}") from None


def domain_option(func: Callable) -> Callable:
    """``--domain NAME|PATH``: the command receives ``domain`` (a name, path or None)."""
    return click.option(
        "--domain", "domain", metavar="NAME|PATH",
        help=f"domain pack: a bundled name or a pack folder (default: ${DOMAIN_ENV}, else "
             "the bundled default pack; see `kgctl domain list`).")(func)
