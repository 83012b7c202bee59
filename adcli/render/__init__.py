"""Renderers: every result of the application layer (adcli.app) as text, in named formats.

One interface: ``render(result, fmt) -> str``. ``formats(ResultType)`` lists the format names a
result type has, and is what the CLI offers as its ``--format`` choices (a result written only
to a file has its own type: ``FlameGraph``, ``adcli show --speedscope``). ``notes(result, fmt)``
are the lines that go to standard error beside ``render(result, fmt)``. To add an output format,
add a function to the ``RENDERERS`` table of the result's module here: this table of tables is
the only one, and ``adcli.profile()``'s results (render/notebook.py) display themselves through it.
"""

from __future__ import annotations

from ..app import Advice, CheckReport, Comparison, CorpusAdvice, CorpusRun, FlameGraph, ProfileView, Report, RuleInfo, RuleListing
from . import check, compare, corpus, profile, report, rules, suggest

_BY_TYPE: dict = {
    ProfileView: profile.RENDERERS,
    FlameGraph: profile.FLAME_RENDERERS,
    Advice: suggest.RENDERERS,
    CheckReport: check.RENDERERS,
    Comparison: compare.RENDERERS,
    RuleListing: rules.LIST_RENDERERS,
    RuleInfo: rules.SHOW_RENDERERS,
    Report: report.RENDERERS,
    CorpusRun: corpus.RUN_RENDERERS,
    CorpusAdvice: corpus.ADVICE_RENDERERS,
}
_NOTES: dict = {Advice: suggest.NOTES, CheckReport: check.NOTES}


def _table(tables: dict, result_type: type) -> dict | None:
    """``result_type``'s table in ``tables``, or that of the result type it extends (a displayed
    result of render/notebook.py renders as the app's result it is)."""
    return next((tables[t] for t in result_type.__mro__ if t in tables), None)


def formats(result_type: type) -> tuple[str, ...]:
    """The format names ``render`` accepts for results of ``result_type``, default first."""
    table = _table(_BY_TYPE, result_type)
    if table is None:
        raise TypeError(f"no renderer for {result_type.__name__}")
    return tuple(table)


def render(result, fmt: str = "table") -> str:
    """``result`` as text in format ``fmt`` (one of ``formats(type(result))``)."""
    table = _table(_BY_TYPE, type(result))
    if table is None:
        raise TypeError(f"no renderer for {type(result).__name__}")
    if fmt not in table:
        raise ValueError(f"{type(result).__name__} has no {fmt!r} format (one of {', '.join(table)})")
    return table[fmt](result)


def notes(result, fmt: str) -> list[tuple[str, bool]]:
    """The lines that go to standard error beside ``render(result, fmt)``, each with whether it
    is shown even with --quiet (a warning, a verdict) or only without (a note)."""
    note = (_table(_NOTES, type(result)) or {}).get(fmt)
    return note(result) if note is not None else []


__all__ = ["render", "formats", "notes"]
