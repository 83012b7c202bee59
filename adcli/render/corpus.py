"""Render ``adcli corpus run`` and ``adcli corpus suggest``: the run's counts; the library tier
as a table, a markdown table for a pull request, or JSON. What the store holds is data: every
name and reason is escaped (text.py)."""

from __future__ import annotations

import dataclasses
import json

from ..app.corpus import CorpusAdvice, CorpusRun
from ..units import DASH, duration, safe
from .console import capture, fitted, left_out
from .text import md_cell, md_code_cell

_HEADERS = ["library signature", "programs", "median share", "largest", "corpus share", "time", "verdict", "saves"]


def _counts(counts: dict) -> str:
    return ", ".join(f"{safe(k)} {v}" for k, v in sorted(counts.items(), key=lambda kv: (kv[0] != "ok", kv[0]))) or "none"


def run_table(r: CorpusRun) -> str:
    s = r.summary
    ran = sum(s.counts.values())
    head = (f"profiled {ran} of {s.programs} programs in {duration(s.wall_s)} on {s.workers} workers "
            f"({_counts(s.counts)}); {s.skipped} stored before, skipped"
            + (f"; {s.changed} stored before, run again (a file they read changed)" if s.changed else ""))
    if s.interrupted:
        head += "; interrupted: every program finished so far is stored, run again to go on"
    return head + f"\nstore {safe(r.store)}: {_counts(r.stored)}"


def run_json(r: CorpusRun) -> str:
    return json.dumps({"store": r.store, **dataclasses.asdict(r.summary), "stored": r.stored}, indent=2)


def _row(row) -> list:
    return [row.signature, str(row.programs), f"{row.median_share:.1%}", f"{row.max_share:.1%}", f"{row.corpus_share:.1%}",
            duration(row.total_s), row.action + (" (est.)" if row.saving_s and not row.measured else ""),
            DASH if not row.saving_s else duration(row.saving_s)]


def _summary(a: CorpusAdvice) -> str:
    text = (f"{a.programs} programs in {a.store} ({_counts(a.by_status)}); {a.profiles} profiles read, "
            f"gradient time {duration(a.gradient_s)}; {len(a.rows)} library signatures derived somewhere")
    if a.corrupt:
        text += f"; {len(a.corrupt)} stored profiles skipped (not valid): " + "; ".join(
            f"{name}: {why}" for name, why in a.corrupt[:3])
    if a.incomplete:
        name, why = a.incomplete[0]
        text += (f"; {len(a.incomplete)} profile(s) incomplete, advised from as they are (first: {name}: {why}): "
                 "`corpus run` again with a larger --replay-budget measures what they left out")
    return safe(text)


def advice_table(a: CorpusAdvice) -> str:
    if not a.rows:
        return _summary(a) + "\nno library signature is derived in the corpus"
    table, dropped = fitted(_HEADERS, [[safe(c) for c in _row(r)] for r in a.rows], flexible=0, drop_order=(3, 5),
                            left=(0, 6))
    return "\n".join(filter(None, [_summary(a), capture(table), left_out(dropped)]))


def advice_markdown(a: CorpusAdvice) -> str:
    lines = [f"**The library tier over the corpus.** {md_cell(_summary(a))}", "",
             "| " + " | ".join(_HEADERS) + " | reason |", "|---|" + "---:|" * (len(_HEADERS) - 2) + "---|---|"]
    for r in a.rows:
        cells = _row(r)
        lines.append("| " + " | ".join([md_code_cell(cells[0]), *map(md_cell, cells[1:]), md_cell(r.reason)]) + " |")
    return "\n".join(lines)


def advice_json(a: CorpusAdvice) -> str:
    return json.dumps(dataclasses.asdict(a), indent=2)


RUN_RENDERERS = {"table": run_table, "json": run_json}
ADVICE_RENDERERS = {"table": advice_table, "markdown": advice_markdown, "json": advice_json}
