"""Render advice: a rich table with the reasons below it, JSON (the documented contract), or markdown."""

from __future__ import annotations

import json
import textwrap

from ..app.advice import Advice
from ..units import DASH, duration, human_bytes, percent, ratio
from .console import capture, console, fitted, left_out
from .text import md_cell, md_code, md_code_cell, md_line, safe


def _incomplete(summary) -> str:
    """What makes the profiles incomplete, as it reads in the profiles ("" when nothing does)."""
    problems = summary.problems or []
    return f"advice from an INCOMPLETE profile: {'; '.join(problems)}" if problems else ""


def _caveat(summary) -> str:
    """The same as a terminal line above the advice: escaped, then its line break (the profile's
    text escaped on its own, so that the break is a real one), or ""."""
    text = _incomplete(summary)
    return safe(text) + "\n" if text else ""


def _nothing(advice: Advice) -> str | None:
    """The one line to print instead of a table, or None."""
    if not advice.summary.derived:
        return _caveat(advice.summary) + (
            "nothing to suggest: every signature in the profile is already served by a rule "
            "(native, imported or hand-written), none is derived")
    if not advice.shown:
        return _caveat(advice.summary) + (
            f"nothing to suggest: no rule would save more than its burden "
            f"({advice.summary.derived} derived signature(s); --all lists them with their reasons)")
    return None


def nothing_to_suggest(advice: Advice) -> str | None:
    """Why nothing is suggested (one line, the incomplete profile's caveat aside), or None."""
    text = _nothing(advice)
    return text.splitlines()[-1] if text else None


def json_notes(advice: Advice) -> list[tuple[str, bool]]:
    """What goes to standard error beside the JSON (a list, the contract): (line, whether it is a
    warning, shown even with --quiet) for the incomplete profile's caveat, the profiles' notes,
    and why nothing is suggested."""
    out = []
    if advice.summary.problems:
        out.append((f"adcli: warning: advice from an incomplete profile: {safe('; '.join(advice.summary.problems))}",
                    True))
    out += [(f"adcli: {safe(note)}", False) for note in filter(None, [*advice.notes, nothing_to_suggest(advice)])]
    return out


def render_json(advice: Advice) -> str:
    """A list of suggestions (the contract), ``[]`` when there is none."""
    return json.dumps([s.to_dict() for s in advice.shown], indent=2)


def _action(s) -> str:
    if s.uncertain:
        return "keep (uncertain)"
    return s.action + (" (alt.)" if s.alternative_to else "")


def _share(s, total: float) -> str:
    """The saving's share of the gradient time, as the range measured when it is one."""
    if s.saving_low_s is None or not total:
        return percent(s.share)
    lo, hi = percent(s.saving_low_s / total), percent(s.saving_high_s / total)
    return lo if lo == hi or s.action == "keep-derived" else f"{lo[:-1]}-{hi}"


def _rows(suggestions, total: float):
    for s in suggestions:
        r = ratio(s.derived_s / s.primal_s) if s.derived_s and s.primal_s else DASH
        rule = DASH if s.rule_s is None else duration(s.rule_s) + ("" if s.rule_measured else " (est.)")
        yield [str(s.rank), _action(s), safe(s.signature), str(s.calls), _time(s.derived_s), _time(s.primal_s), r, rule,
               _time(s.saving_s), _share(s, total), human_bytes(s.allocs_derived_bytes)]


def _time(x) -> str:
    return DASH if x is None else duration(x)


COLUMNS = ["#", "action", "signature", "calls", "derived /call", "primal /call", "AD ratio",
           "rule /call", "saving /run", "share", "allocs/call"]
# the terminal table's headers break after their first word, so the numbers' columns stay narrow
HEADERS = [c.replace(" ", "\n", 1) for c in COLUMNS]
# left out first on a narrow terminal: allocations, calls, AD ratio, primal, derived
_DROP = tuple(COLUMNS.index(c) for c in ("allocs/call", "calls", "AD ratio", "primal /call", "derived /call"))


TIER_TITLES = {
    "library": "Library rules (NumPy, SciPy): each serves every program that calls it",
    "user": "Your functions: savings after the library rules above",
}


def _headline(advice: Advice) -> str:
    summary = advice.summary
    derived, decomposed = summary.derived, summary.decomposed
    if decomposed == derived:
        how = "from each signature's measured cost decomposition"
    elif decomposed:
        how = f"from the measured cost decomposition ({decomposed} of {derived}), else {summary.factor_basis}"
    else:
        how = f"with {summary.factor_basis}"
    time = duration(summary.gradient_s)
    if summary.replayed:
        time += f" without the profiler ({duration(summary.profiled_s)} profiled)"
    hidden = sum(1 for s in advice.suggestions if advice.tier in (None, s.tier)) - len(advice.shown)
    more = f"; {hidden} more, kept derived, with --all" if hidden > 0 else ""
    return (f"{derived} derived signature(s) in {summary.profiles} profile(s), gradient time {time}{more}; "
            f"hand-written rules estimated {how}")


def _tiers(advice: Advice) -> list:
    """(title, suggestions) per tier with something to show, library first (ranks run on)."""
    shown = [t for t in TIER_TITLES if any(s.tier == t for s in advice.shown)]
    return [(TIER_TITLES[t] if len(shown) > 1 else TIER_TITLES[t].split(":")[0],
             [s for s in advice.shown if s.tier == t]) for t in shown]


def render_table(advice: Advice) -> str:
    nothing = _nothing(advice)
    if nothing:
        return "\n".join([safe(n) for n in advice.notes] + [nothing])
    parts = [safe(_headline(advice))]
    for title, shown in _tiers(advice):
        # the signature wraps and low-value columns go first on a narrow terminal: numbers stay whole
        table, dropped = fitted(HEADERS, list(_rows(shown, advice.summary.gradient_s)), flexible=2, drop_order=_DROP, left=(1, 2),
                                title=title, title_justify="left", caption_justify="left")
        table.caption = left_out(dropped) or None
        parts.append(capture(table).rstrip("\n"))
    reasons = []
    width = console().width
    for s in advice.shown:
        reasons.append(f"{s.rank}. {s.action} {safe(s.signature)}")
        # wrapped to the terminal, each reason indented under its bullet
        reasons += [textwrap.fill(safe(r), width, initial_indent="   - ", subsequent_indent="     ",
                                  break_on_hyphens=False) for r in s.reasons]
    caveat = _caveat(advice.summary)
    head = (textwrap.fill(caveat, width, break_on_hyphens=False) + "\n" if caveat else "") + \
        textwrap.fill(parts[0], width, break_on_hyphens=False)
    for note in advice.notes:
        head += "\n" + textwrap.fill(safe(note), width, break_on_hyphens=False)
    return "\n".join([head] + parts[1:]) + "\n" + "\n".join(reasons)


def render_markdown(advice: Advice) -> str:
    nothing = _nothing(advice)
    if nothing:
        return "\n\n".join([f"*{md_line(n)}*" for n in advice.notes] + [nothing])
    caveat = _incomplete(advice.summary)
    lines = ([f"> **{md_line(caveat)}**", ""] if caveat else []) + [f"**{md_line(_headline(advice))}**"]
    lines += [f"*{md_line(note)}*" for note in advice.notes]
    for title, shown in _tiers(advice):
        lines += ["", f"*{md_line(title)}*", "", "| " + " | ".join(COLUMNS) + " |",
                  "|" + "|".join("---" if i in (1, 2) else "---:" for i in range(len(COLUMNS))) + "|"]
        for row in _rows(shown, advice.summary.gradient_s):
            lines.append("| " + " | ".join(md_code_cell(c) if k == 2 else md_cell(c) for k, c in enumerate(row)) + " |")
    lines.append("")
    for s in advice.shown:
        lines.append(f"{s.rank}. **{s.action}** {md_code(s.signature)}")
        lines += [f"   - {md_line(r)}" for r in s.reasons]
    return "\n".join(lines)


RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
# the table and the markdown show their caveat and notes themselves; the JSON is a list (the contract)
NOTES = {"json": json_notes}
