"""The feedback envelope every tool server returns to an agent when it refuses a call.

One shape for the instantiation and the retrieval tools: what was wrong (`code`, `field`,
`value`, `message`), what would be accepted (`allowed`), how to retry (`hint`) and whether
retrying makes sense. Each server adds its own context fields by subclassing.

>>> Envelope(code="enum_value", field="atmosphere", value="argon", message="not allowed",
...          allowed=("Ar", "N2")).model_dump()["status"]
'rejected'
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    status: Literal["rejected"] = "rejected"
    code: str
    field: str | None = None
    value: Any = None
    message: str
    allowed: tuple[Any, ...] = ()
    hint: str = ""
    retryable: bool = True
