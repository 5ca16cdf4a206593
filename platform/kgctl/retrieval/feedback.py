"""Results and feedback of the retrieval tools (pydantic models: the tools' wire schemas).

A rejected step is data: :class:`Feedback` says what was wrong, the value, what is allowed and
how to retry; the container is left unchanged. Tools raise :class:`Rejected` and the MCP
adapter turns it into an ``is_error`` result carrying the feedback.

>>> fb = Feedback(code="unknown_property", field="property", value="sosa:hasColour",
...               message="no such property", allowed=("sosa:observes",))
>>> Rejected(fb).feedback.retryable, str(Rejected(fb))
(True, 'unknown_property: no such property')
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kgctl.feedback import Envelope


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Option(Frozen):
    """A ranked candidate: an entity, or a schema path for add_path_constraint."""

    rank: int
    value: str  # IRI of an entity, or the path text
    label: str = ""
    score: float = 0.0
    classes: tuple[str, ...] = ()


class Feedback(Envelope):
    """The shared envelope plus ranked options and the container's unchanged query."""

    allowed: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    sparql: str = ""  # the container's query, unchanged


class Rejected(Exception):
    def __init__(self, feedback: Feedback):
        super().__init__(f"{feedback.code}: {feedback.message}")
        self.feedback = feedback


def reject(code: str, message: str, **fields: Any) -> Rejected:
    return Rejected(Feedback(code=code, message=message, **fields))


class QueryView(Frozen):
    """State of a container after a tool call: always the full current SPARQL."""

    status: Literal["ok"] = "ok"
    query_id: str
    template: str
    sparql: str
    variables: dict[str, str]  # variable -> class or datatype (CURIE)
    columns: tuple[str, ...]
    change: str
    # patterns of the template every row must match (rows without them are left out) and
    # the template that keeps those rows
    requires: tuple[str, ...] = ()
    optional_form: str = ""
    dry_run_ms: float = 0.0


class QueryAnswer(Frozen):
    query_id: str
    sparql: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]
    truncated: bool


class ClassSummary(Frozen):
    iri: str
    curie: str
    label: str
    instances: int
    comment: str = ""


class ClassList(Frozen):
    classes: tuple[ClassSummary, ...]


class PropertySummary(Frozen):
    curie: str
    kind: str
    direction: Literal["out", "in"]
    other_end: tuple[str, ...]  # range (out) or domain (in), CURIEs
    instances: int
    quantity_units: tuple[str, ...] = ()


class ClassDescription(Frozen):
    curie: str
    label: str
    comment: str
    instances: int
    parents: tuple[str, ...]
    subclasses: tuple[str, ...]
    properties: tuple[PropertySummary, ...]
    templates: tuple[str, ...]


class EntityMatches(Frozen):
    query: str
    candidates: tuple[Option, ...]
    ambiguous: bool
    no_match: bool = False  # no label scores MATCH_THRESHOLD or more: nothing is offered
    label_properties: tuple[str, ...] = ()  # the predicates searched (CURIEs)


class Statement(Frozen):
    property: str
    value: str
    kind: Literal["iri", "literal"]


class EntityDescription(Frozen):
    iri: str
    classes: tuple[str, ...]
    labels: tuple[str, ...]
    outgoing: tuple[Statement, ...]
    incoming: tuple[Statement, ...]


class TemplateList(Frozen):
    templates: dict[str, str]  # name -> description
    skipped: dict[str, str] = {}  # template file -> why it does not fit the loaded ontology
