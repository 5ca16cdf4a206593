"""Running the agent's async code from synchronous callers (CLI, tests).

MCP sessions run inside task groups, so an error raised by the agent arrives wrapped in an
ExceptionGroup; callers want the one kgctl error it carries, not the group.

>>> from kgctl.errors import InputError
>>> async def fails():
...     raise ExceptionGroup("x", [ExceptionGroup("y", [InputError("bad paper")])])
>>> run_sync(fails)
Traceback (most recent call last):
...
kgctl.errors.InputError: bad paper
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from kgctl.errors import KgctlError

T = TypeVar("T")


def run_sync(fn: Callable[[], Awaitable[T]]) -> T:
    """Run an async function to completion; a kgctl error inside a group is re-raised alone."""
    try:
        return anyio.run(fn)
    except BaseExceptionGroup as group:
        error = first_kgctl_error(group)
        if error is None:
            raise
        raise error from None


def first_kgctl_error(group: BaseExceptionGroup) -> KgctlError | None:
    for exc in group.exceptions:
        if isinstance(exc, KgctlError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = first_kgctl_error(exc)
            if found is not None:
                return found
    return None
