"""What a report measured and from what: the first line of every report (terminal, HTML, JSON).

A score means different things depending on where the graphs came from. Replaying the bundled
traces, which were made from the ground truth itself, measures the round trip through ontology,
tools and read-out queries: the ceiling an extractor could reach, not extraction accuracy.
Graphs an LLM built from paper text measure extraction by that model.

>>> s = Source(kind="round_trip", kgctl_version="0.1.0", date="2026-01-01T00:00:00Z")
>>> s.headline
'round trip of ground-truth traces (ceiling of ontology + tools + queries)'
>>> Source(kind="extraction", model="m", server="http://x/v1", kgctl_version="0.1.0",
...        date="d").headline
'extraction by m on http://x/v1'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

import kgctl
from kgctl.errors import InputError
from kgctl.evaluation.scorer import STRICT

SourceKind = Literal["round_trip", "extraction", "replay", "store", "records"]
ROUND_TRIP = "round trip of ground-truth traces (ceiling of ontology + tools + queries)"
HASH_CHARS = 12  # of the sha256, enough to tell two files apart in a report


class InputFile(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    sha256: str


class Source(BaseModel):
    """Where the scored graphs came from, with the versions and inputs behind the figures."""

    model_config = ConfigDict(frozen=True)
    kind: SourceKind
    model: str | None = None  # extraction: the model name
    server: str | None = None  # extraction: the OpenAI-compatible server URL
    origin: str | None = None  # replay / store / records: the folder scored
    kgctl_version: str
    date: str
    ontology: tuple[InputFile, ...] = ()
    benchmark: str | None = None
    scorers: tuple[str, ...] = ()

    @property
    def headline(self) -> str:
        """The one phrase saying what the figures measure."""
        if self.kind == "round_trip":
            return ROUND_TRIP
        if self.kind == "extraction":
            return f"extraction by {self.model or 'an unnamed model'} on {self.server or '?'}"
        if self.kind == "replay":
            return f"replay of recorded traces from {self.origin} (how they were made is " \
                   "not recorded)"
        if self.kind == "store":
            return f"graphs in {self.origin} (how they were made is not recorded)"
        return f"records scored as given ({self.origin})"

    @property
    def first_line(self) -> str:
        """Headline plus versions and inputs, for the top of every report."""
        files = ", ".join(f"{f.name} {f.sha256}" for f in self.ontology) or "none"
        parts = [self.headline, f"kgctl {self.kgctl_version}", self.date,
                 f"ontology: {files}"]
        if self.benchmark:
            parts.append(f"benchmark {self.benchmark}")
        if self.scorers:
            parts.append(f"scorers {', '.join(self.scorers)}")
        return " · ".join(parts)

    def to_dict(self) -> dict:
        return {"headline": self.headline, **self.model_dump(mode="json")}


def make_source(kind: SourceKind, *, ontology: Iterable[Path] = (), benchmark: str | None = None,
                scorers: Iterable[str] = (), **details: str | None) -> Source:
    """A Source stamped with this kgctl's version and the current UTC time."""
    return Source(kind=kind, kgctl_version=kgctl.__version__,
                  date=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                  ontology=tuple(file_hashes(ontology)), benchmark=benchmark,
                  scorers=tuple(scorers), **details)


def file_hashes(paths: Iterable[Path]) -> list[InputFile]:
    """Name and shortened sha256 of each file (profiles beside a T-Box included by callers)."""
    return [InputFile(name=p.name, sha256=hashlib.sha256(p.read_bytes()).hexdigest()[:HASH_CHARS])
            for p in paths]


def default_ontology_files() -> list[Path]:
    """The default T-Boxes and the profiles beside them, as `default_ir` reads them."""
    from kgctl.ontology import default_ontology_paths

    found = []
    for ttl in default_ontology_paths():
        found.append(ttl)
        profile = ttl.with_suffix(".profile.yaml")
        if profile.is_file():
            found.append(profile)
    return found


def source_for(kind: SourceKind, *, benchmark: str | None = None,
               ontology: Sequence[Path] | None = None, **details: str | None) -> Source:
    """The Source of an evaluation naming both scorers; `ontology`: the T-Box and profile
    files read (default: the bundled ones)."""
    files = default_ontology_files() if ontology is None else ontology
    return make_source(kind, ontology=files, benchmark=benchmark, scorers=scorer_names(),
                       **details)


def scorer_names() -> tuple[str, ...]:
    """The scorers every records report gives: strict, and the record schema's second rule."""
    from kgctl.evaluation.schema import record_schema

    try:
        rule = record_schema().compatible
    except InputError:  # the default pack has no record schema
        rule = None
    return (STRICT.name, *([rule.name] if rule else []))
