"""What the chemistry extension offers the generic stages, by the names a domain pack's
``hooks:`` give them (the generic packages never import this package).

- ``structures``: the grounding tier that parses names to structures (OPSIN) and, with minting,
  the minter of species the reference lacks (`kgctl ground --structures [--mint]`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from kgctl.grounding.matcher import Matcher


def structures(stack: contextlib.ExitStack, matcher: Matcher, *, reference: Path | None,
               endpoint: str | None, mint: bool, dry_run: bool):
    """(structure tier lookup, minter or None); the OPSIN process and the minter live as long
    as `stack`. Minted species go into the `reference` folder or the `endpoint`."""
    from kgctl.chemistry.mint import Minter
    from kgctl.chemistry.opsin import Opsin
    from kgctl.chemistry.tier import StructureTier

    opsin = stack.enter_context(Opsin())
    minter = None
    if mint:
        minter = Minter(matcher, opsin, reference, endpoint=endpoint, dry_run=dry_run)
        stack.callback(minter.close)
    return StructureTier(matcher, opsin).lookup, minter
