"""Progress of a long phase: on stderr only, and only when stderr is a terminal, so that
redirected output (a saved report, JSON) holds nothing but the result.

>>> progress_bar().disable  # under pytest stderr is not a terminal
True
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def progress_bar(*, quiet: bool = False) -> Progress:
    """A bar per task (description, bar, done/total, time); `quiet` silences it too."""
    console = Console(stderr=True)
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True,
                    disable=quiet or not console.is_terminal)
