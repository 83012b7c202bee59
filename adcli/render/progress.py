"""A progress display for long work (the replays), on stderr, only on a terminal."""

from __future__ import annotations

import contextlib
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from . import console as console_settings


@contextlib.contextmanager
def progress_callback():
    """Yield ``progress(done, total, label)`` or None when stderr is not a terminal, or --quiet."""
    if not sys.stderr.isatty() or console_settings.QUIET:
        yield None
        return

    with Progress(TextColumn("replaying"), BarColumn(), TextColumn("{task.completed}/{task.total} {task.description}"),
                  console=Console(stderr=True, no_color=not console_settings.styled(True),
                                  color_system="auto" if console_settings.styled(True) else None),
                  transient=True) as bar:
        task = None

        def progress(done: int, total: int, label: str) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(label[:60], total=total)
            bar.update(task, completed=done, description=label[:60])

        yield progress
