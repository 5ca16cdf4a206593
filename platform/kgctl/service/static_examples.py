"""The example queries of the web page (``static/examples.json``), for the page, tests and
benchmarks alike.

>>> [e["title"] for e in load_examples()][:1]
['Products of every synthesis (with CCDC number)']
"""

from __future__ import annotations

import json
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent / "static" / "examples.json"


def load_examples() -> list[dict[str, str]]:
    """Each example as ``{"title": ..., "query": ...}``."""
    return json.loads(EXAMPLES.read_text(encoding="utf-8"))
