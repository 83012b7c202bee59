"""Render advice: a rich table with the reasons below it, JSON (the documented contract), or markdown."""

from __future__ import annotations

import json

from rich.table import Table

from ..app.advice import Advice
from ..units import DASH, duration, human_bytes, ms, percent, ratio
from .console import capture
from .text import md_cell, md_code, md_code_cell, md_line, safe


def _nothing(advice: Advice) -> str | None:
    """The one line to print instead of a table, or None."""
    if not advice.summary["derived"]:
        return ("nothing to suggest: every signature in the profile is already served by a rule "
                "(native, imported or hand-written), none is derived")
    if not advice.shown:
        return (f"nothing to suggest: no rule would save more than its burden "
                f"({advice.summary['derived']} derived signature(s); --all lists them with their reasons)")
    return None


def render_json(advice: Advice) -> str:
    if not advice.summary["derived"]:
        return _nothing(advice)
    return json.dumps([s.to_dict() for s in advice.shown], indent=2)


def _rows(suggestions):
    for s in suggestions:
        r = ratio(s.derived_s / s.primal_s) if s.derived_s and s.primal_s else DASH
        rule = ms(s.rule_s) + ("" if s.rule_measured or s.rule_s is None else " (est.)")
        yield [str(s.rank), s.action, safe(s.signature), str(s.calls), ms(s.derived_s), ms(s.primal_s), r, rule,
               ms(s.saving_s), percent(s.share), human_bytes(s.allocs_derived_bytes)]


COLUMNS = ["#", "action", "signature", "calls", "derived (ms/call)", "primal (ms/call)", "AD ratio",
           "rule (ms/call)", "saving (ms/run)", "share", "allocs/call"]


def _headline(summary) -> str:
    return (f"{summary['derived']} derived signature(s) in {summary['profiles']} profile(s), gradient time "
            f"{duration(summary['gradient_s'])}; hand-written rules estimated with {summary['factor_basis']}")


def render_table(advice: Advice) -> str:
    nothing = _nothing(advice)
    if nothing:
        return nothing
    table = Table(title=safe(_headline(advice.summary)), title_justify="left")
    for i, c in enumerate(COLUMNS):
        table.add_column(c, justify="left" if i in (1, 2) else "right", no_wrap=i in (1, 2))
    for row in _rows(advice.shown):
        table.add_row(*row)
    reasons = []
    for s in advice.shown:
        reasons.append(f"{s.rank}. {s.action} {safe(s.signature)}")
        reasons += [f"   - {safe(r)}" for r in s.reasons]
    return capture(table) + "\n" + "\n".join(reasons)


def render_markdown(advice: Advice) -> str:
    nothing = _nothing(advice)
    if nothing:
        return nothing
    lines = [f"**{md_line(_headline(advice.summary))}**", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" if i in (1, 2) else "---:" for i in range(len(COLUMNS))) + "|"]
    for row in _rows(advice.shown):
        lines.append("| " + " | ".join(md_code_cell(c) if k == 2 else md_cell(c) for k, c in enumerate(row)) + " |")
    lines.append("")
    for s in advice.shown:
        lines.append(f"{s.rank}. **{s.action}** {md_code(s.signature)}")
        lines += [f"   - {md_line(r)}" for r in s.reasons]
    return "\n".join(lines)


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
