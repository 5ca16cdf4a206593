"""Findings are data: one record type for every constraint violation, one envelope for agents.

>>> f = Finding(code="unit_unknown", field="target_temperature.unit", value="furlong",
...             message="unknown unit", allowed=("degreeCelsius", "kelvin"))
>>> env = Feedback.from_findings([f])
>>> env.status, env.code, env.field, env.retryable
('rejected', 'unit_unknown', 'target_temperature.unit', True)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kgctl.errors import DataRejected
from kgctl.feedback import Envelope

# code -> what it enforces (the documented, stable vocabulary; docs/instantiation.md)
CODES: dict[str, str] = {
    "unknown_argument": "an argument the tool does not have",
    "required_missing": "a required argument or property (min cardinality of a profile or "
                        "an axiom, someValuesFrom) is absent",
    "max_one": "a second value for a property allowed at most once (max cardinality 1 or "
               "owl:FunctionalProperty)",
    "datatype": "a value that is not of the property's xsd range (incl. non-numeric quantity)",
    "range": "a number outside its allowed range (xsd non-negative types, order start, "
             "magnitudes that cannot be negative)",
    "enum_value": "a value outside the enumeration of the property (owl:oneOf anywhere), or "
                  "other than an owl:hasValue",
    "unit_unknown": "a unit spelling that names no known unit",
    "unit_incompatible": "a known unit not allowed for the quantity kind",
    "type_mismatch": "a referenced entity whose class is not admitted by the domain/range "
                     "(owl:unionOf expanded), an allValuesFrom or a someValuesFrom filler",
    "foreign_iri": "an IRI of another paper's graph",
    "not_found": "a referenced IRI or label that names no entity of this paper",
    "ambiguous": "a label that names several entities; use an IRI",
    "order_duplicate": "an order value already taken within the container",
    "order_gap": "an order value that would leave a gap (orders are contiguous start..N)",
    "duplicate": "the same link already exists",
    "cardinality": "more or fewer values than an OWL (qualified) cardinality allows; max 0 means "
                   "the property does not apply to the class",
    "too_large": "oversized input (text, list or whole call)",
    "invalid_text": "control characters in a text value",
    "invalid_iri": "a string that looks like an IRI but is not a valid one",
    "unknown_tool": "no such tool",
    "no_paper": "no paper selected in this session (call select_paper)",
    "store_error": "the store could not be read or written (not retryable as is)",
}
Code = str


class Finding(BaseModel):
    """One violation: what was wrong, where, and what would be accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    code: Code
    field: str
    value: Any = None
    message: str
    allowed: tuple[Any, ...] = ()
    hint: str = ""
    retryable: bool = True


class Feedback(Envelope):
    """The error envelope an agent reads: the first finding in front, all of them listed."""

    field: str
    findings: tuple[Finding, ...] = ()

    @classmethod
    def from_findings(cls, findings: list[Finding]) -> Feedback:
        first = findings[0]
        return cls(**first.model_dump(), findings=tuple(findings))


class Rejected(DataRejected):
    """A call refused by validation; carries the findings (nothing was written)."""

    def __init__(self, findings: list[Finding]) -> None:
        self.feedback = Feedback.from_findings(findings)
        super().__init__(f"{self.feedback.code} at {self.feedback.field}: "
                         f"{self.feedback.message}")


class ToolResult(BaseModel):
    """Success: the IRIs written and a short summary; read tools return their rows in `data`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    status: Literal["ok", "dry_run"] = "ok"
    paper: str
    tool: str
    iris: tuple[str, ...] = ()
    summary: str = ""
    added: int = 0
    removed: int = 0
    data: list[dict[str, Any]] = []
    # values the ontology expects that the call left out (soft someValuesFrom / minimum
    # cardinality): written anyway; add them when the paper states them
    missing: tuple[Finding, ...] = ()
