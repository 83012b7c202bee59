"""Renderers: every result of the application layer (adcli.app) as text, in named formats.

One interface: ``render(result, fmt) -> str``. ``formats(ResultType)`` lists the format names a
result type has, and is what the CLI offers as its ``--format`` choices. To add an output
format, add a function to the ``RENDERERS`` table of the result's module here.
"""

from __future__ import annotations

from ..app import Advice, CheckReport, Comparison, ProfileView, RuleInfo, RuleListing
from ..app.report import Report
from . import check, compare, profile, report, rules, suggest

_BY_TYPE: dict = {
    ProfileView: profile.RENDERERS,
    Advice: suggest.RENDERERS,
    CheckReport: check.RENDERERS,
    Comparison: compare.RENDERERS,
    RuleListing: rules.LIST_RENDERERS,
    RuleInfo: rules.SHOW_RENDERERS,
    Report: report.RENDERERS,
}


def formats(result_type: type) -> tuple[str, ...]:
    """The format names ``render`` accepts for results of ``result_type``, default first."""
    return tuple(_BY_TYPE[result_type])


def render(result, fmt: str = "table") -> str:
    """``result`` as text in format ``fmt`` (one of ``formats(type(result))``)."""
    table = _BY_TYPE.get(type(result))
    if table is None:
        raise TypeError(f"no renderer for {type(result).__name__}")
    if fmt not in table:
        raise ValueError(f"{type(result).__name__} has no {fmt!r} format (one of {', '.join(table)})")
    return table[fmt](result)


__all__ = ["render", "formats"]

from . import html  # noqa: E402, F401  (gives the result types str() and Jupyter display; uses render above)
