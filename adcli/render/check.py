"""Render ``adcli check`` results: one line per rule, its report indented below; or JSON."""

from __future__ import annotations

import json

from ..app.check import CheckReport
from .text import safe


def render_table(report: CheckReport) -> str:
    if not report.results:
        return f"{report.path} declares no rule"
    lines = []
    for r in report.results:
        lines.append(safe(f"{r.status.upper():5s}  {r.rule}  [{r.source}]" + (f"  on {r.on}" if r.on else "")))
        lines += [f"       {safe(line)}" for line in (r.report or "").splitlines()]
    return "\n".join(lines)


def render_json(report: CheckReport) -> str:
    if not report.results:
        return f"{report.path} declares no rule"
    return json.dumps([r.to_json() for r in report.results], indent=2)


def summary_line(report: CheckReport) -> str:
    return f"{len(report.results) - len(report.failed)} of {len(report.results)} rule(s) ok"


RENDERERS = {"table": render_table, "json": render_json}
