"""Where the reference KG lives: one place for every command.

`kgctl reference build`, `kgctl ground` and `kgctl demo` all use `$KGCTL_REFERENCE`, else
``~/.cache/kgctl/reference/store`` (about 430 MB once built, plus about 190 MB of label index
under ``$KGCTL_CACHE/grounding``; building both takes a few minutes the first time).
"""

from __future__ import annotations

import os
from pathlib import Path

REFERENCE_ENV = "KGCTL_REFERENCE"


def default_reference() -> Path:
    """The reference store folder."""
    default = Path.home() / ".cache" / "kgctl" / "reference" / "store"
    return Path(os.environ.get(REFERENCE_ENV) or default)
