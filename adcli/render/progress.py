"""A progress display for long work (the replays), on stderr, only on a terminal."""

from __future__ import annotations

import contextlib
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from . import console as console_settings


@contextlib.contextmanager
def progress_callback(verb: str = "replaying", unit: str = "calls"):
    """Yield ``progress(done, total, label, calls)`` or None when stderr is not a terminal, or
    --quiet: a bar over the signatures (``verb``), the calls replayed so far (``unit``: it moves
    while one signature is replayed), the time elapsed and an estimate of the time left."""
    if not sys.stderr.isatty() or console_settings.QUIET:
        yield None
        return
    styled = console_settings.styled(True)
    # the console is bound to the real stderr now: the replays hide what the program prints
    console = Console(file=sys.stderr, no_color=not styled, color_system="auto" if styled else None)
    columns, room = layout(console.width, verb, unit)
    with Progress(*columns, console=console, transient=True) as bar:
        task = None

        def progress(done: int, total: int, label: str, calls: int = 0) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(cut(label, room), total=total, calls=calls)
            bar.update(task, completed=done, description=cut(label, room), calls=calls)

        yield progress


FIXED = 52  # the columns but the bar and the label: "replaying", "12/12", "123456 calls", the times, spaces


def layout(width: int, verb: str = "replaying", unit: str = "calls") -> tuple[list, int]:
    """The progress line's columns for a terminal ``width`` wide, and the room for the label:
    the bar takes what the label leaves, between 10 and 40 columns; one line, never wrapped."""
    bar = max(10, min(40, width - FIXED - 30))
    room = max(width - FIXED - bar - 1, 0)
    return [TextColumn(verb), BarColumn(bar_width=bar), TextColumn("{task.completed}/{task.total}"),
            TextColumn(f"{{task.fields[calls]}} {unit}"), TimeElapsedColumn(), TextColumn("left"),
            TimeRemainingColumn(), TextColumn("{task.description}")], room


def cut(label: str, room: int) -> str:
    """``label`` in ``room`` columns, an ellipsis where it is cut."""
    return label if len(label) <= room else label[: max(room - 1, 0)] + "…"
