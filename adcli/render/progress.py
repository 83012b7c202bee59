"""A progress display for long work (the replays), on stderr, only on a terminal."""

from __future__ import annotations

import contextlib
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn


@contextlib.contextmanager
def progress_callback():
    """Yield ``progress(done, total, label)`` or None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return

    with Progress(TextColumn("replaying"), BarColumn(), TextColumn("{task.completed}/{task.total} {task.description}"),
                  console=Console(stderr=True), transient=True) as bar:
        task = None

        def progress(done: int, total: int, label: str) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(label[:60], total=total)
            bar.update(task, completed=done, description=label[:60])

        yield progress
