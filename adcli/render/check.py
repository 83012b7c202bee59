"""Render ``adcli check`` results: one line per rule, its report indented below; or JSON."""

from __future__ import annotations

import json

from ..app.check import CheckReport
from ..units import DASH, duration, human_bytes
from .console import paint, wrapped
from .text import md_cell, md_code, md_line, safe

STYLES = {"ok": "bold green", "wrong": "bold red", "fail": "bold red", "error": "bold red", "todo": "yellow"}


def render_table(report: CheckReport) -> str:
    """A line per rule, its status coloured on a terminal, and its report below, wrapped to
    the terminal (a continued line indented further)."""
    if not report.results:
        return f"{report.path} declares no rule"
    lines = []
    for r in report.results:
        head = wrapped(safe(f"{r.rule}  [{r.source}]" + (f"  on {r.on}" if r.on else "")), " " * 7, " " * 9)
        lines.append(paint(f"{r.status.upper():5s}", STYLES.get(r.status, "")) + head[5:])
        lines += [wrapped(safe(line), " " * 7, " " * (9 + len(line) - len(line.lstrip())))
                  for line in (r.report or "").splitlines()]
    for ev in report.evidence:
        lines += ["", *_evidence_markdown(ev)]
    return "\n".join(lines)


def _cell(seconds, nbytes=None) -> str:
    if seconds is None:
        return DASH
    return duration(seconds) + (f", {human_bytes(nbytes)}" if nbytes is not None else "")


def _evidence_markdown(ev) -> list:
    """The table a rule's pull request carries (markdown, readable as text too)."""
    out = [f"**{md_code(ev.rule)}**: gradient check {md_line(ev.check)}; without the rule it is {md_line(ev.without)}",
           "", md_line(ev.scaling), "", "| size | input shapes | with the rule | without it | autograd | rule speedup |",
           "|---:|---|---:|---:|---:|---:|"]
    for row in ev.rows:
        if row.note:
            out.append(f"| {row.size}x | {md_cell(row.shapes)} | {md_cell(row.note)} | | | |")
            continue
        speed = f"{row.speedup:.1f}x" if row.speedup else DASH
        out.append(f"| {row.size}x | {md_cell(row.shapes)} | {_cell(row.rule_s, row.rule_bytes)} | "
                   f"{_cell(row.without_s, row.without_bytes)} | {_cell(row.peer_s, row.peer_bytes)} | {speed} |")
    return out


def render_markdown(report: CheckReport) -> str:
    lines = [f"- **{md_line(r.status.upper())}** {md_code(r.rule)} [{md_line(r.source)}]" for r in report.results]
    for ev in report.evidence:
        lines += ["", *_evidence_markdown(ev)]
    return "\n".join(lines) if report.results else f"{report.path} declares no rule"


def render_json(report: CheckReport) -> str:
    """An object: ``path``, ``rules``, ``ok``, ``results`` (one per rule, with the checks passed,
    the times and peak memory of the rule and of what it replaces) and ``evidence`` (--sizes)."""
    return json.dumps(report.to_json(), indent=2)


def summary_line(report: CheckReport) -> str:
    return f"{len(report.results) - len(report.failed)} of {len(report.results)} rule(s) ok"


def summary_notes(report: CheckReport) -> list[tuple[str, bool]]:
    """What goes to standard error after the report, in every format, even with --quiet: how
    many rules are ok, or (as pytest's "no tests collected") that nothing was checked."""
    if not report.results:
        return [(f"adcli: {safe(report.path)} declares no rule: nothing was checked", True)]
    return [(summary_line(report), True)]


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
NOTES = dict.fromkeys(RENDERERS, summary_notes)
