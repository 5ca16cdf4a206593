"""The one error of the chemistry box a user can cause: a missing optional part."""

from __future__ import annotations

from kgctl.errors import InputError


class ChemistryUnavailable(InputError):
    """Java (for OPSIN) or RDKit is missing; the message says which and how to install it."""
