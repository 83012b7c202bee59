"""The one console every table is printed through.

Plain text (no ANSI at all, not just no colour) when NO_COLOR is set or stdout is not a
terminal, so that piped output and CI logs stay greppable; off a terminal a fixed width keeps
the columns from collapsing to rich's 80-column default.
"""

from __future__ import annotations

import os

from rich.console import Console

WIDTH = 140  # columns when stdout is not a terminal


def console() -> Console:
    tty = os.isatty(1)
    plain = bool(os.environ.get("NO_COLOR")) or not tty
    return Console(no_color=plain, color_system=None if plain else "auto", force_terminal=tty or None,
                   width=None if tty else WIDTH, highlight=False, emoji=False, markup=False)


def capture(renderable) -> str:
    """What ``renderable`` prints, as text with no trailing blanks."""
    c = console()
    with c.capture() as cap:
        c.print(renderable)
    return "\n".join(line.rstrip() for line in cap.get().rstrip().splitlines())
