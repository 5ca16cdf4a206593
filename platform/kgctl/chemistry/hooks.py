"""What the chemistry extension offers the generic stages, by the names a domain pack's
``hooks:`` give them (the generic packages never import this package).

- ``structures``: the grounding tier that parses names to structures (OPSIN) and, with minting,
  the minter of species the reference lacks (`kgctl ground --structures [--mint]`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from kgctl.grounding.matcher import Matcher


def structures(stack: contextlib.ExitStack, matcher: Matcher, *, reference: Path, mint: bool,
               dry_run: bool):
    """(structure tier lookup, minter or None); the OPSIN process lives as long as `stack`."""
    from kgctl.chemistry.mint import Minter
    from kgctl.chemistry.opsin import Opsin
    from kgctl.chemistry.tier import StructureTier

    opsin = stack.enter_context(Opsin())
    minter = Minter(matcher, opsin, reference, dry_run=dry_run) if mint else None
    return StructureTier(matcher, opsin).lookup, minter
