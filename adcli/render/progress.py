"""A progress display for long work (the replays), on stderr, only on a terminal."""

from __future__ import annotations

import contextlib
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from . import console as console_settings


@contextlib.contextmanager
def progress_callback():
    """Yield ``progress(done, total, label, calls)`` or None when stderr is not a terminal, or
    --quiet: a bar over the signatures, the calls replayed so far (it moves while one signature
    is replayed), the time elapsed and an estimate of the time left."""
    if not sys.stderr.isatty() or console_settings.QUIET:
        yield None
        return
    styled = console_settings.styled(True)
    # the console is bound to the real stderr now: the replays hide what the program prints
    console = Console(file=sys.stderr, no_color=not styled, color_system="auto" if styled else None)
    with Progress(TextColumn("replaying"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[calls]} calls"), TimeElapsedColumn(), TextColumn("left"),
                  TimeRemainingColumn(), TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = None

        def progress(done: int, total: int, label: str, calls: int = 0) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(label[:50], total=total, calls=calls)
            bar.update(task, completed=done, description=label[:50], calls=calls)

        yield progress
