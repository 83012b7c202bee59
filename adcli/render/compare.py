"""Render ``adcli compare``: a table, markdown, or JSON.

The per-signature rows are the two profiles' (one run each). With timing (``--script``), the
sides' noise ranges per run and the change between them as a range, "within noise" when the
ranges overlap; without it, the totals say they are one run each.
"""

from __future__ import annotations

import json

from ..app.compare import Comparison
from ..app.timing import change_range
from ..units import DASH, duration, duration_range, percent_range
from .console import capture, fitted, left_out, paint, wrapped
from .text import md_cell, md_code, md_code_cell, md_line, safe

HEAD = ["signature", "before", "after", "change", "served before", "served after"]
STYLES = {"faster": "bold green", "slower": "bold red", "within noise": "yellow"}


def _pct(v) -> str:
    return DASH if v is None else f"{v:+.0%}"


def _time(s) -> str:
    return DASH if s is None else duration(s)


def _rows(c: Comparison) -> list[list[str]]:
    return [[safe(r.signature), _time(r.before_s), _time(r.after_s), _pct(r.change), r.before_served_by or DASH,
             r.after_served_by or DASH] for r in c.rows]


def _total(c: Comparison) -> str:
    one_run = ", one run each" if c.timing is None else ""
    return (f"profiled gradient time {duration(c.total_before_s)} -> {duration(c.total_after_s)} "
            f"({_pct(c.total_change)}{one_run})")


def _side(spread) -> str:
    return f"{duration_range(spread.low, spread.high)} (median {duration(spread.median)})"


def _change(low: float, high: float, within: bool) -> str:
    verdict = "within noise" if within else ("slower" if low > 0 else "faster")
    return f"{percent_range(low, high)}, {verdict}"


def timing_lines(c: Comparison) -> list[str]:
    """What the timing found, in words (no styles): a heading, then before, after and change."""
    t = c.timing
    if t is None:
        return ["one run of each profile: the change is within their noise, unknown; --script SCRIPT --rules FILE "
                "times each side with repeats"]
    rules = ", ".join(safe(r) for r in t.rules)
    lines = [f"timed in {t.before.rounds} rounds, the sides in turn: the gradients of the functions handed to grad, "
             f"per run of the program, without {rules} (before) and with it (after); a range is the middle half of "
             "the rounds"]
    for g in t.gradients if len(t.gradients) > 1 else ():
        lines.append(f"{safe(g.signature)} x {g.gradients}: {_side(g.before)} -> {_side(g.after)}: "
                     f"{_change(*change_range(g.before, g.after), g.before.overlaps(g.after))}")
    low, high = t.change
    lines += [f"before  {_side(t.before)}", f"after   {_side(t.after)}",
              f"change  {_change(low, high, t.within_noise)}"]
    return lines


def _painted(line: str) -> str:
    for verdict, style in STYLES.items():
        if line.endswith(verdict):
            return line[: -len(verdict)] + paint(verdict, style)
    return line


def _notes(c: Comparison) -> str:
    return "".join(wrapped(safe(n), "note: ") + "\n" for n in c.notes)


def render_table(c: Comparison) -> str:
    table, dropped = fitted(HEAD, _rows(c), flexible=0, drop_order=(4,), left=(0, 4, 5), title=_total(c),
                            title_justify="left", caption_justify="left")
    table.caption = left_out(dropped) or None
    timed = [_painted(wrapped(line, "  " if k else "", "      " if k else "")) for k, line in enumerate(timing_lines(c))]
    return _notes(c) + capture(table) + "\n\n" + "\n".join(timed)


def render_markdown(c: Comparison) -> str:
    # a note may quote the profiles' commands: as code, which markdown never turns into a link or HTML
    lines = [f"> note: {md_code(n)}" for n in c.notes] + ([""] if c.notes else [])
    lines += [f"**{_total(c)}**", "", "| " + " | ".join(HEAD) + " |", "|---|---:|---:|---:|---|---|"]
    lines += ["| " + " | ".join(md_code_cell(x) if k == 0 else md_cell(x) for k, x in enumerate(r)) + " |"
              for r in _rows(c)]
    lines += [""] + [f"- {md_line(line)}" if k else md_line(line) for k, line in enumerate(timing_lines(c))]
    return "\n".join(lines)


def render_json(c: Comparison) -> str:
    """An object: ``rows`` (per signature, the profiles' one run each), the profiles' totals,
    ``notes``, ``verdict`` (faster, slower, within noise, or untimed) and ``timing`` (null, or
    each side's spread per run and per function handed to grad, seconds, and the change's range
    ``change_low`` to ``change_high``)."""
    return json.dumps(c.to_json(), indent=2)


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
