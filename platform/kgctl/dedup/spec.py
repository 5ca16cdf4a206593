"""Deduplication specs: per class group, where names and identifying keys live.

>>> specs = load_specs()
>>> [s.name for s in specs]
['chemical', 'product', 'mop', 'cbu', 'device']
>>> specs[0].classes[0]
'https://www.theworldavatar.com/kg/OntoSyn/ChemicalInput'
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from kgctl.dedup.cluster import Thresholds
from kgctl.errors import InputError

DEFAULT_SPECS = Path(__file__).with_name("classes.yaml")


class KeySpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str
    property: str
    normalise: Literal["formula", "ccdc", "inchikey", "iri", "text"]
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


def load_specs(path: Path = DEFAULT_SPECS) -> list[DedupSpec]:
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
