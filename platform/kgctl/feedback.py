"""The feedback envelope every tool server returns to an agent when it refuses a call.

One shape for the instantiation, retrieval and grounding tools: what was wrong (`code`, `field`,
`value`, `message`), what would be accepted (`allowed`), how to retry (`hint`) and whether
retrying makes sense. Each server adds its own context fields by subclassing.

>>> env = Envelope(code="enum_value", field="atmosphere", value="argon", message="not allowed",
...                allowed=("Ar", "N2"))
>>> env.model_dump()["status"], env.to_json()[:40]
('rejected', '{"allowed": ["Ar", "N2"], "code": "enum_')
"""

from __future__ import annotations

import json
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

    def to_json(self) -> str:
        """The envelope as the JSON text an MCP error result carries (keys sorted)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)
