"""Render ``adcli compare``: a table, markdown, or JSON."""

from __future__ import annotations

import json

from ..app.compare import Comparison
from ..units import DASH, ms
from .console import capture, fitted, left_out
from .text import md_cell, md_code, md_code_cell, safe

HEAD = ["signature", "before (ms)", "after (ms)", "change", "served before", "served after"]


def _pct(v) -> str:
    return DASH if v is None else f"{v:+.0%}"


def _rows(c: Comparison) -> list[list[str]]:
    return [[safe(r.signature), ms(r.before_s), ms(r.after_s), _pct(r.change), r.before_served_by or DASH,
             r.after_served_by or DASH] for r in c.rows]


def _total(c: Comparison) -> str:
    return (f"total gradient time {ms(c.total_before_s)} ms -> {ms(c.total_after_s)} ms "
            f"({_pct(c.total_change)})")


def _notes(c: Comparison) -> str:
    return "".join(f"note: {safe(n)}\n" for n in c.notes)


def render_table(c: Comparison) -> str:
    table, dropped = fitted(HEAD, _rows(c), flexible=0, drop_order=(4,), left=(0, 4, 5), title=_total(c),
                            title_justify="left", caption_justify="left")
    table.caption = left_out(dropped) or None
    return _notes(c) + capture(table)


def render_markdown(c: Comparison) -> str:
    # a note may quote the profiles' commands: as code, which markdown never turns into a link or HTML
    lines = [f"> note: {md_code(n)}" for n in c.notes] + ([""] if c.notes else [])
    lines += [f"**{_total(c)}**", "", "| " + " | ".join(HEAD) + " |", "|---|---:|---:|---:|---|---|"]
    lines += ["| " + " | ".join(md_code_cell(x) if k == 0 else md_cell(x) for k, x in enumerate(r)) + " |"
              for r in _rows(c)]
    return "\n".join(lines)


def render_json(c: Comparison) -> str:
    return json.dumps(c.to_json(), indent=2)


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
