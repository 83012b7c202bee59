"""The renderer tables: one table of tables (adcli.render), every entry reachable through
``formats`` (what the CLI offers as ``--format``), side outputs through ``notes``, and the
notebook's displayed results rendered by the same tables. Nothing here runs the profiler."""

import importlib
import json
import os
import pkgutil

import pytest

import adcli.render
from adcli import app
from adcli.app.check import RuleCheck
from adcli.render import formats, notes, render
from adcli.render.notebook import DisplayedView
from adcli.render.profile import render_speedscope
from tests.test_render_profile import make_profile


@pytest.fixture(autouse=True)
def plain_output(monkeypatch):
    """As when piped: no terminal, so no colour and a fixed width, whatever runs the tests."""
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def _tables(suffix: str) -> list:
    """Every table named ``*<suffix>`` in the modules of adcli/render."""
    found = []
    for info in pkgutil.iter_modules(adcli.render.__path__):
        module = importlib.import_module(f"adcli.render.{info.name}")
        found += [(f"{info.name}.{name}", value) for name, value in vars(module).items()
                  if name.endswith(suffix) and isinstance(value, dict)]
    return found


def test_every_renderer_table_is_reachable_through_formats():
    """A RENDERERS table no result type names would be a format nobody can ask for."""
    registered = {id(table): result_type for result_type, table in adcli.render._BY_TYPE.items()}
    tables = _tables("RENDERERS")
    assert tables
    for name, table in tables:
        assert id(table) in registered, f"{name} is in no result type's entry of adcli.render"
        assert formats(registered[id(table)]) == tuple(table), name
    assert len(registered) == len(tables)  # and the registry holds no table of its own


def test_notes_are_for_formats_the_result_has():
    for name, table in _tables("NOTES"):
        [result_type] = [t for t, notes_table in adcli.render._NOTES.items() if notes_table is table]
        assert set(table) <= set(formats(result_type)), name


def test_every_result_the_cli_renders_has_formats():
    for result_type in (app.ProfileView, app.FlameGraph, app.Advice, app.CheckReport, app.Comparison,
                        app.RuleListing, app.RuleInfo, app.Report):
        assert formats(result_type)
    with pytest.raises(TypeError, match="no renderer for Export"):
        formats(app.Export)


def test_the_speedscope_file_is_a_format_of_the_flame_graph():
    profile = make_profile()
    text = render(app.FlameGraph(profile), "speedscope")
    assert text == json.dumps(render_speedscope(profile))
    assert "speedscope" not in formats(app.ProfileView)  # a file of its own (--speedscope), not a --format


def test_check_notes_say_how_many_rules_are_ok_or_that_none_was_declared():
    report = app.CheckReport("rules.py", [RuleCheck("numpy.sin(f64[1d])", "declared", "ok", "")])
    for fmt in formats(app.CheckReport):
        assert notes(report, fmt) == [("1 of 1 rule(s) ok", True)]
    assert notes(app.CheckReport("rules.py", []), "json") == [
        ("adcli: rules.py declares no rule: nothing was checked", True)]
    assert notes(app.ProfileView(make_profile()), "table") == []  # no table of notes: nothing beside it


def test_a_displayed_result_renders_as_the_result_it_extends():
    profile = make_profile()
    view, shown = app.ProfileView(profile, 5, "allocations"), DisplayedView(profile, 5, "allocations")
    assert isinstance(shown, app.ProfileView) and formats(DisplayedView) == formats(app.ProfileView)
    for fmt in formats(app.ProfileView):
        assert render(shown, fmt) == render(view, fmt)
    assert str(shown) == render(view, "table")
    assert shown._repr_html_().startswith("<p><b>Gradient time:</b>") and "<table>" in shown._repr_html_()
    assert "_repr_html_" not in vars(app.ProfileView) and "__str__" not in vars(app.ProfileView)  # no patching
