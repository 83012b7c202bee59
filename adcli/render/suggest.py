"""Render suggestions: a rich table, JSON (the documented contract), or markdown."""

from __future__ import annotations

import json

from rich.table import Table

from ..units import human_bytes
from .rules import _capture


def _ms(s) -> str:
    if s is None:
        return "—"
    return f"{s * 1e3:.3f}"


def _kb(b) -> str:
    return "—" if b is None else human_bytes(b)


def render_json(suggestions, summary) -> str:
    return json.dumps([s.to_dict() for s in suggestions], indent=2)


def _rows(suggestions):
    for s in suggestions:
        ratio = f"{s.derived_s / s.primal_s:.1f}×" if s.derived_s and s.primal_s else "—"
        rule = _ms(s.rule_s) + ("" if s.rule_measured or s.rule_s is None else " (est.)")
        yield [str(s.rank), s.action, s.signature, str(s.calls), _ms(s.derived_s), _ms(s.primal_s), ratio, rule,
               _ms(s.saving_s), f"{s.share:.0%}", _kb(s.allocs_derived_bytes)]


COLUMNS = ["#", "action", "signature", "calls", "derived (ms/call)", "primal (ms/call)", "AD ratio",
           "rule (ms/call)", "saving (ms/run)", "share", "allocs/call"]


def _headline(summary) -> str:
    return (f"{summary['derived']} derived signature(s) in {summary['profiles']} profile(s), gradient time "
            f"{summary['gradient_s'] * 1e3:.1f} ms; hand-written rules estimated with {summary['factor_basis']}")


def render_table(suggestions, summary) -> str:
    table = Table(title=_headline(summary), title_justify="left")
    for i, c in enumerate(COLUMNS):
        table.add_column(c, justify="left" if i in (1, 2) else "right", no_wrap=i in (1, 2))
    for row in _rows(suggestions):
        table.add_row(*row)
    reasons = []
    for s in suggestions:
        reasons.append(f"{s.rank}. {s.action} {s.signature}")
        reasons += [f"   - {r}" for r in s.reasons]
    return _capture(table, width=160) + "\n" + "\n".join(reasons)


def render_markdown(suggestions, summary) -> str:
    lines = [f"**{_headline(summary)}**", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" if i in (1, 2) else "---:" for i in range(len(COLUMNS))) + "|"]
    for row in _rows(suggestions):
        row[2] = "`" + row[2].replace("|", "\\|") + "`"
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for s in suggestions:
        lines.append(f"{s.rank}. **{s.action}** `{s.signature}`")
        lines += [f"   - {r}" for r in s.reasons]
    return "\n".join(lines)


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
