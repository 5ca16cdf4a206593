"""The error vocabulary shared by every box.

Exit codes of the CLI: 0 ok, 1 data rejected, 2 usage or tool error, 128+N stopped by signal N
(130 Ctrl-C, 143 SIGTERM).
A user-caused failure raises one of these; the CLI prints its message, never a traceback.

>>> err = InputError("no such file: x.ttl")
>>> err.exit_code, str(err)
(2, 'no such file: x.ttl')
>>> DataRejected("3 records invalid").exit_code
1
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class KgctlError(Exception):
    """Base of all errors a user can cause; carries the CLI exit code."""

    exit_code: int = EXIT_USAGE


class InputError(KgctlError):
    """Bad path, unreadable or malformed input file, bad option value."""


class OntologyError(InputError):
    """A T-Box or profile that cannot be compiled (syntax, unknown names, conflicts)."""


class StoreError(KgctlError):
    """The store cannot be opened, read or written (locked, unreachable, server error)."""


class DataRejected(KgctlError):
    """The input was read but its content was refused (e.g. validation found violations)."""

    exit_code = EXIT_REJECTED
