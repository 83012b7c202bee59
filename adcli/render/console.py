"""The one console every table is printed through, and tables that fit it.

Plain text (no ANSI at all, not just no colour) when NO_COLOR is set or stdout is not a
terminal, so that piped output and CI logs stay greppable; off a terminal a fixed width keeps
the columns from collapsing to rich's 80-column default (COLUMNS, when set, wins everywhere).

:func:`fitted` builds a table whose numbers are never truncated: every column but one keeps its
widest cell; the one flexible column (a signature) wraps; and when even that does not fit, the
lowest-value columns are left out, in a stated order, and a note says which.
"""

from __future__ import annotations

import contextlib
import os
import re
import textwrap

from rich.console import Console
from rich.table import Table
from rich.text import Text

WIDTH = 140  # columns when stdout is not a terminal


def _columns_env() -> int | None:
    try:
        n = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return n if n >= 40 else None


# Set by the command line: --quiet, --color/--no-color (None: decide from the terminal and NO_COLOR).
QUIET = False
COLOR: bool | None = None
_PLAIN = [0]  # > 0 inside plain(): output bound for a file


@contextlib.contextmanager
def plain():
    """Render for a file: no ANSI styles, the off-terminal width."""
    _PLAIN[0] += 1
    try:
        yield
    finally:
        _PLAIN[0] -= 1


def styled(tty: bool) -> bool:
    """Whether output gets ANSI styles: --color/--no-color, else a terminal without NO_COLOR."""
    if _PLAIN[0]:
        return False
    if COLOR is not None:
        return COLOR
    return tty and not os.environ.get("NO_COLOR")


def console() -> Console:
    tty = os.isatty(1) and not _PLAIN[0]
    plain = not styled(tty)
    width = _columns_env() or (None if tty else WIDTH)
    if not plain and not tty:  # --color off a terminal
        return Console(color_system="standard", force_terminal=True, width=width, highlight=False, emoji=False,
                       markup=False)
    return Console(no_color=plain, color_system=None if plain else "auto", force_terminal=tty or None,
                   width=width, highlight=False, emoji=False, markup=False)


def fitted(headers: list, rows: list, *, flexible: int, drop_order: tuple = (), left: tuple = (),
           min_flexible: int = 24, **table_args) -> tuple[Table, list]:
    """A table of ``rows`` (lists of strings) that fits the console: column ``flexible`` wraps,
    the others keep their widest cell; columns in ``drop_order`` (indices, least valuable first)
    are left out while the table is still too wide. Returns the table and the names left out."""
    width = console().width
    natural = [max(len(line) for cell in [h] + [r[i] for r in rows] for line in str(cell).split("\n"))
               for i, h in enumerate(headers)]

    def need(cols):  # rich's box: one border, and padding + separator per column
        return 1 + sum((min(natural[i], min_flexible) if i == flexible else natural[i]) + 3 for i in cols)

    keep = list(range(len(headers)))
    dropped = []
    for i in drop_order:
        if need(keep) <= width:
            break
        keep.remove(i)
        dropped.append(" ".join(headers[i].split()))
    room = max(width - need([i for i in keep if i != flexible]) - 3, min_flexible)  # the flexible column's width
    table = Table(**table_args)
    for i in keep:
        flex = i == flexible
        table.add_column(headers[i], justify="left" if i in left else "right", no_wrap=not flex,
                         overflow="fold", min_width=None if flex else natural[i])
    for r in rows:
        table.add_row(*[wrap_at_commas(r[i], room) if i == flexible else r[i] for i in keep])
    return table, dropped


_BREAK = re.compile(r"(?<=\()|(?<=, )")  # a signature breaks after "(" and after ", "


def wrap_at_commas(text: str, width: int) -> str:
    """``text`` in lines of at most ``width``, broken after "(" and ", " where it can be (a part
    longer than ``width`` is left for the table to fold)."""
    if len(text) <= width:
        return text
    lines, line = [], ""
    for part in _BREAK.split(text):
        if line and len(line) + len(part.rstrip()) > width:
            lines.append(line.rstrip())
            line = part
        else:
            line += part
    lines.append(line.rstrip())
    return "\n".join(lines)


def left_out(dropped: list) -> str:
    """The note under a table whose columns did not all fit."""
    return (f"(columns left out to fit {console().width} columns: {', '.join(dropped)}; "
            "a wider terminal or --format markdown shows them)") if dropped else ""


def capture(renderable) -> str:
    """What ``renderable`` prints, as text with no trailing blanks."""
    c = console()
    with c.capture() as cap:
        c.print(renderable)
    return "\n".join(line.rstrip() for line in cap.get().rstrip().splitlines())


def paint(text: str, style: str) -> str:
    """``text`` in ``style`` (a rich style: "green", "bold red") when the console shows styles
    (a terminal without NO_COLOR, or --color), else ``text`` itself."""
    c = console()
    if c.no_color or c.color_system is None:
        return text
    with c.capture() as cap:
        c.print(Text(text, style=style), end="", soft_wrap=True)
    return cap.get()


def wrapped(text: str, first: str = "", rest: str | None = None) -> str:
    """``text`` broken into lines that fit the terminal (or COLUMNS), the first behind
    ``first``, the others behind ``rest`` (default: as many spaces); a word longer than a line
    (a path) is not cut. Off a terminal, without COLUMNS, one line: whole for grep and logs."""
    width = _columns_env() or (console().width if os.isatty(1) and not _PLAIN[0] else None)
    if width is None:
        return first + text
    return textwrap.fill(text, width=width, initial_indent=first,
                         subsequent_indent=" " * len(first) if rest is None else rest,
                         break_long_words=False, break_on_hyphens=False)
