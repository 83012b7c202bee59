"""adcli's pytest plugin (registered through the ``pytest11`` entry point when adcli is
installed): test your rules in your own suite.

* ``adcli_check_rule(target, *args, kwargs=None, **options)``: runs
  :func:`adcli.testing.check_rule` (gradient against finite differences, output type and
  layout, inputs unchanged, accumulation, agreement with the rule it replaces) and returns its
  report; a failed check fails the test with a one-line assertion naming the argument, its worst
  component and the relative error (no adcli frames in the traceback). ``timing`` is off unless you
  pass ``timing=True`` (timings belong to benchmarks, not to tests on shared machines).
* ``adcli_rules``: ``adcli.rules`` for declaring rules inside a test; every rule declared or
  imported through it during the test is removed afterwards, so tests do not leak rules.
* ``@pytest.mark.adcli_rules("mymodule.rules")``: import a rules module for one test and remove
  the rules it declared afterwards.
"""

from __future__ import annotations

import importlib
import sys

import pytest


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "adcli_rules(module, ...): load adcli rules modules for this test only")


def _declared() -> set:
    from .engine.registry import declared_rules

    return {id(r) for r in declared_rules()}


def _remove_new(before: set) -> None:
    from .engine.registry import declared_rules, remove_rule

    for r in declared_rules():
        if id(r) not in before:
            remove_rule(r)


@pytest.fixture
def adcli_check_rule():
    from .testing import check_rule

    def check(target, *args, kwargs=None, timing: bool = False, **options):
        __tracebackhide__ = True  # a failed check shows as its one-line message, not adcli's frames
        return check_rule(target, *args, kwargs=kwargs, timing=timing, **options)

    return check


@pytest.fixture
def adcli_rules():
    import adcli.rules

    before = _declared()
    yield adcli.rules
    _remove_new(before)


@pytest.fixture(autouse=True)
def _adcli_rules_marker(request):
    marker = request.node.get_closest_marker("adcli_rules")
    if marker is None:
        yield
        return
    before = _declared()
    for name in marker.args:  # (re)loaded: its rules were removed after the last test that used it
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    yield
    _remove_new(before)
