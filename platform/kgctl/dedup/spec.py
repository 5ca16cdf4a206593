"""Deduplication specs: per class group, where names and identifying keys live.

A domain pack names its spec file (``dedup:`` in ``domain.yaml``); a pack without one gets
specs derived from its T-Box (`derive_specs`): one per class with instances, names from the
label properties, keys from the class's natural key and its functional identifier properties.

>>> specs = pack_specs(None)
>>> len(specs) > 1 and all(s.classes and s.labels for s in specs)
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from kgctl.dedup.cluster import Thresholds
from kgctl.errors import InputError
from kgctl.ontology.ir import OntologyIR
from kgctl.packs import load_pack

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS = "http://www.w3.org/2004/02/skos/core#"
# local names of functional datatype properties taken as identifiers of their class
IDENTIFIER_NAME = re.compile(r"(identifier|[a-z]Id|_id|Code|Number|DOI|URI)$|^(id|doi)$",
                             re.IGNORECASE)


class KeySpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str
    property: str
    normalise: str  # a normaliser of dedup.keys, or one the domain pack adds (hook)
    merge: bool = False
    conflict: bool = False


class DedupSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    classes: tuple[str, ...]
    labels: tuple[str, ...]
    keys: tuple[KeySpec, ...] = ()
    merge_threshold: float = Thresholds().merge
    review_threshold: float = Thresholds().review
    name_scope: Literal["global", "paper"] = "global"

    def thresholds(self) -> Thresholds:
        return Thresholds(
            merge=self.merge_threshold,
            review=self.review_threshold,
            merge_keys=tuple(k.kind for k in self.keys if k.merge),
            conflict_keys=tuple(k.kind for k in self.keys if k.conflict),
            name_scope=self.name_scope,
        )


def _expand(name: str, prefixes: dict[str, str]) -> str:
    prefix, sep, local = name.partition(":")
    if sep and prefix in prefixes:
        return prefixes[prefix] + local
    if name.startswith(("http://", "https://")):
        return name
    raise InputError(f"unknown prefix in {name!r}")


def pack_specs(domain: str | Path | None, *, ir: OntologyIR | None = None,
               present: Iterable[str] | None = None) -> list[DedupSpec]:
    """The dedup specs of a domain pack: its spec file, else derived from its T-Box (`ir`,
    default: the pack's) for the classes in `present` (default: every class)."""
    pack = load_pack(domain)
    path = pack.part("dedup")
    if path is not None:
        return load_specs(path)
    if ir is None:
        from kgctl.ontology.loader import pack_ir

        ir = pack_ir(pack.root)
    return derive_specs(ir, present=present)


def derive_specs(ir: OntologyIR, *, present: Iterable[str] | None = None) -> list[DedupSpec]:
    """One spec per concrete class (of `present`, when given): names from rdfs:label and the
    SKOS labels the T-Box declares, keys from the class's natural key and its functional
    datatype properties named like identifiers (an equal value links, a different one
    forbids linking)."""
    wanted = set(present) if present is not None else None
    labels = (RDFS_LABEL, *(SKOS + n for n in ("prefLabel", "altLabel")
                            if SKOS + n in ir.properties))
    specs, names = [], set()
    for iri, info in ir.classes.items():
        if info.abstract or info.external or info.deprecated:
            continue
        if wanted is not None and iri not in wanted:
            continue
        lineage = {iri, *info.ancestors}
        keys = [info.key] if info.key else []
        keys += [p.iri for p in ir.properties.values()
                 if p.kind == "datatype" and p.functional and IDENTIFIER_NAME.search(p.name)
                 and (not p.domain or lineage & set(p.domain)) and p.iri not in keys]
        name = base = re.sub(r"[^0-9a-z]+", "_", info.name.lower()).strip("_") or "class"
        n = 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.add(name)
        specs.append(DedupSpec(
            name=name, classes=(iri,), labels=labels,
            keys=tuple(KeySpec(kind=f"key{i}", property=k, normalise="text", merge=True,
                               conflict=True) for i, k in enumerate(keys, 1))))
    return specs


def load_specs(path: Path) -> list[DedupSpec]:
    """Read a spec file, expanding prefixed names to IRIs."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("specs"), list):
            raise InputError(f"malformed dedup spec {path}: a mapping with a 'specs' list")
        prefixes = data.get("ontology_prefixes") or {}
        specs = []
        for raw in data["specs"]:
            raw = dict(raw)
            raw["classes"] = [_expand(c, prefixes) for c in raw["classes"]]
            raw["labels"] = [_expand(p, prefixes) for p in raw["labels"]]
            raw["keys"] = [{**k, "property": _expand(k["property"], prefixes)}
                           for k in raw.get("keys", [])]
            specs.append(DedupSpec(**raw))
    except OSError as exc:
        raise InputError(f"cannot read dedup spec {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise InputError(f"cannot read dedup spec {path}: not UTF-8 text") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"malformed dedup spec {path}: {where}: {first['msg']}") from None
    except (yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        reason = " ".join(str(exc).split())
        raise InputError(f"malformed dedup spec {path}: {reason}") from None
    return specs
