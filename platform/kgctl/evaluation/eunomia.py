"""Eunomia MOF water-stability benchmark: cleaning loader, ternary accuracy and yield.

The gold file (`benchmarks/eunomia/case-study-3-ground-truth.csv`) is shipped as published;
every cleaning rule (C1-C9) lives here and is listed in benchmarks/eunomia/PROVENANCE.md.

>>> name_key("[Cd(oba)(bib)] /C12H2O}n") == name_key("[Cd(oba)(bib)]·2H2O}n")
True
>>> aliases("IRMOF-1/MOF-5/Zn4O(BDC)3")
('IRMOF-1/MOF-5/Zn4O(BDC)3', 'IRMOF-1', 'MOF-5', 'Zn4O(BDC)3')
>>> aliases("Zn/Co-BTEC")
('Zn/Co-BTEC',)
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kgctl.errors import InputError

GOLD_FILE = "case-study-3-ground-truth.csv"
STABLE, UNSTABLE, NOT_PROVIDED = "Stable", "Unstable", "Not provided"
LABELS = (STABLE, UNSTABLE, NOT_PROVIDED)
DEFINITE = (STABLE, UNSTABLE)
# C3: a control character stands where the DOI's "/" belongs
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
DOI_PREFIX = re.compile(r"^(https?://(dx\.)?doi\.org/|doi:)", re.I)
# C5: a row whose DOI was copied from the neighbouring reference: (reference, wrong DOI) -> DOI
DOI_FIXES = {(66, "10.1073/pnas.0602439103"): "10.1002/chem.201502532"}
# C7: PDF glyph artefacts -> the character they stand for
GLYPHS = (("/H11032", "′"), ("/C1", "·"), ("$", "·"), ("m-4,40-", "μ-4,4′-"), ("4,40-", "4,4′-"))
# C8: "/"-separated aliases only when every part is at least this long ("Zn/Co-BTEC" is one name)
MIN_ALIAS_CHARS = 3
LABEL_SPELLINGS = {"stable": STABLE, "unstable": UNSTABLE, "not provided": NOT_PROVIDED,
                   "not_provided": NOT_PROVIDED, "": NOT_PROVIDED}
PRED_COLUMNS = {"doi": ("doi",), "mof": ("mof", "mof contained", "name"),
                "label": ("label", "true water stability", "water stability", "stability")}


class GoldMof(BaseModel):
    """One cleaned gold MOF of one paper."""

    model_config = ConfigDict(frozen=True)
    reference: int
    doi: str
    name: str
    label: str
    aliases: tuple[str, ...]


class Prediction(BaseModel):
    """One predicted (doi, mof, label) row."""

    model_config = ConfigDict(frozen=True)
    doi: str
    mof: str
    label: str


class StabilityScore(BaseModel):
    """Ternary accuracy and yield with the counts behind them."""

    model_config = ConfigDict(frozen=True)
    gold_mofs: int
    correct: int
    accuracy: float
    gold_definite: int
    definite_correct: int
    yield_: float
    unmatched_predictions: int
    duplicate_predictions: int
    confusion: dict[str, dict[str, int]]

    def to_dict(self) -> dict:
        data = self.model_dump()
        data["yield"] = data.pop("yield_")
        return data


def clean_doi(doi: str) -> str:
    """C3/C4: control char -> "/", surrounding spaces and a resolver prefix dropped, lower case.

    >>> clean_doi(" https://doi.org/10.1073\\x02PNAS.0602439103 ")
    '10.1073/pnas.0602439103'
    """
    return DOI_PREFIX.sub("", CONTROL_CHARS.sub("/", doi).strip()).lower()


def clean_name(name: str) -> str:
    """C4/C7: glyph artefacts replaced, whitespace runs collapsed, ends stripped."""
    for artefact, char in GLYPHS:
        name = name.replace(artefact, char)
    return " ".join(name.split())


def name_key(name: str) -> str:
    """Matching key: cleaned, NFKC, case-folded, without whitespace; "·" and "." are one."""
    text = unicodedata.normalize("NFKC", clean_name(name)).casefold()
    return "".join(text.split()).replace("·", ".")


def aliases(name: str) -> tuple[str, ...]:
    """C8: the name itself and, if it lists aliases with "/" outside brackets, each alias."""
    name = clean_name(name)
    parts, depth, start = [], 0, 0
    for i, char in enumerate(name):
        depth += (char in "([{") - (char in ")]}")
        if char == "/" and depth == 0:
            parts.append(name[start:i].strip())
            start = i + 1
    parts.append(name[start:].strip())
    if len(parts) == 1 or min(map(len, parts)) < MIN_ALIAS_CHARS:
        return (name,)
    return (name, *parts)


def normalise_label(label: str, *, where: str) -> str:
    """A label spelling -> Stable / Unstable / Not provided."""
    try:
        return LABEL_SPELLINGS[" ".join(label.split()).casefold()]
    except KeyError:
        raise InputError(f"{where}: unknown water-stability label {label!r} "
                         f"(use one of {', '.join(LABELS)})") from None


def load_gold(path: Path) -> list[GoldMof]:
    """The Eunomia ground truth with cleaning rules C1-C9 applied."""
    rows = _read_csv(path)
    mofs = []
    for n, row in enumerate(rows, start=2):
        where = f"{path}:{n}"
        try:
            ref = int(row["Reference"])
            raw_doi, raw_name, raw_label = (row["DOI"], row["MOF contained"],
                                            row["True Water Stability"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{where}: expected Reference, DOI, MOF contained, "
                             "True Water Stability") from None
        doi = clean_doi(raw_doi)
        doi = DOI_FIXES.get((ref, doi), doi)
        mofs.append(GoldMof(reference=ref, doi=doi, name=clean_name(raw_name),
                            label=normalise_label(raw_label, where=where),
                            aliases=aliases(raw_name)))
    return _dedup(_one_reference_per_paper(mofs))


def load_predictions(path: Path) -> list[Prediction]:
    """Predicted (doi, mof, label) rows from a CSV or a JSON list of objects."""
    if path.suffix.lower() == ".json":
        try:
            rows = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not readable JSON: {exc}") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise InputError(f"{path}: expected a JSON list of {{doi, mof, label}} objects")
    else:
        rows = _read_csv(path)
    return [_prediction(row, where=f"{path}: row {n}") for n, row in enumerate(rows, start=1)]


def score_stability(gold: list[GoldMof], preds: list[Prediction]) -> StabilityScore:
    """Ternary accuracy over all gold MOFs and yield over the gold Stable/Unstable ones.

    A gold MOF without a matching prediction counts as predicted "Not provided".

    >>> g = [GoldMof(reference=1, doi="d", name="A", label="Stable", aliases=("A",)),
    ...      GoldMof(reference=1, doi="d", name="B", label="Not provided", aliases=("B",))]
    >>> s = score_stability(g, [Prediction(doi="d", mof="a", label="Unstable")])
    >>> s.correct, s.accuracy, s.definite_correct, s.yield_
    (1, 0.5, 0, 0.0)
    """
    index = _alias_index(gold)
    predicted: dict[int, str] = {}
    unmatched = duplicates = 0
    for pred in preds:
        hit = next((index[(pred.doi, name_key(a))] for a in aliases(pred.mof)
                    if (pred.doi, name_key(a)) in index), None)
        if hit is None:
            unmatched += 1
        elif hit in predicted:
            duplicates += 1
        else:
            predicted[hit] = pred.label
    confusion = {g: dict.fromkeys(LABELS, 0) for g in LABELS}
    for i, mof in enumerate(gold):
        confusion[mof.label][predicted.get(i, NOT_PROVIDED)] += 1
    correct = sum(confusion[label][label] for label in LABELS)
    definite = sum(sum(confusion[label].values()) for label in DEFINITE)
    definite_correct = sum(confusion[label][label] for label in DEFINITE)
    return StabilityScore(
        gold_mofs=len(gold), correct=correct, accuracy=_ratio(correct, len(gold)),
        gold_definite=definite, definite_correct=definite_correct,
        yield_=_ratio(definite_correct, definite), unmatched_predictions=unmatched,
        duplicate_predictions=duplicates, confusion=confusion)


def _read_csv(path: Path) -> list[dict[str, str]]:
    # C1 (BOM) through utf-8-sig; C2: the unnamed column made by the header's trailing comma
    # (curator notes in 4 rows) is dropped.
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            return [{k: v for k, v in row.items() if k} for row in csv.DictReader(handle)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path}: not a readable CSV file: {exc}") from None


def _prediction(row: dict, *, where: str) -> Prediction:
    lowered = {str(k).strip().casefold(): v for k, v in row.items()}
    values = {}
    for field, names in PRED_COLUMNS.items():
        value = next((lowered[n] for n in names if n in lowered), None)
        if value is None or not isinstance(value, str):
            raise InputError(f"{where}: missing text field {field!r} (doi, mof, label)")
        values[field] = value
    return Prediction(doi=clean_doi(values["doi"]), mof=clean_name(values["mof"]),
                      label=normalise_label(values["label"], where=where))


def _one_reference_per_paper(mofs: list[GoldMof]) -> list[GoldMof]:
    """C6: a DOI annotated under two references keeps one: most definite labels, then lowest."""
    definite = Counter((m.doi, m.reference) for m in mofs if m.label in DEFINITE)
    refs: dict[str, set[int]] = {}
    for m in mofs:
        refs.setdefault(m.doi, set()).add(m.reference)
    keep = {doi: min(rs, key=lambda r: (-definite[(doi, r)], r)) for doi, rs in refs.items()}
    return [m for m in mofs if keep[m.doi] == m.reference]


def _dedup(mofs: list[GoldMof]) -> list[GoldMof]:
    """C9: rows naming the same MOF of the same paper twice: kept once, a conflict is an error."""
    seen: dict[tuple[str, str], GoldMof] = {}
    for m in mofs:
        key = (m.doi, name_key(m.name))
        if key in seen and seen[key].label != m.label:
            raise InputError(f"gold MOF {m.name!r} ({m.doi}) has two labels: "
                             f"{seen[key].label} and {m.label}")
        seen.setdefault(key, m)
    return list(seen.values())


def _alias_index(gold: list[GoldMof]) -> dict[tuple[str, str], int]:
    """(doi, alias key) -> gold position; an alias shared by two MOFs of a paper is dropped."""
    owners: dict[tuple[str, str], set[int]] = {}
    for i, mof in enumerate(gold):
        for alias in mof.aliases:
            owners.setdefault((mof.doi, name_key(alias)), set()).add(i)
    return {key: next(iter(ids)) for key, ids in owners.items() if len(ids) == 1}


def _ratio(num: int, den: int) -> float:
    return num / den if den else 1.0
