"""The pytest plugin (adcli/pytest_plugin.py): users test their rules in their own suites."""

import subprocess
import sys
import textwrap

RULES = '''
import numpy as np

import adcli.rules


@adcli.rules.rule(np.cumsum, "f64[1d]")
def cumsum_rule(x):
    def pullback(g):
        return (np.cumsum(g[::-1])[::-1],)

    return np.cumsum(x), pullback
'''

TESTS = '''
import numpy as np
import pytest

from adcli.engine.registry import declared_rules


def test_fixture_checks_a_good_rule(adcli_check_rule, adcli_rules):
    @adcli_rules.rule(np.cumsum, "f64[1d]")
    def cumsum_rule(x):
        def pullback(g):
            return (np.cumsum(g[::-1])[::-1],)
        return np.cumsum(x), pullback

    report = adcli_check_rule(np.cumsum, np.linspace(0.1, 1.0, 5))
    assert "finite differences" in report.checks and report.rule == "<hand-written rule numpy.cumsum(f64[1d])>"


def test_the_rule_did_not_leak():
    assert not [r for r in declared_rules() if r.target is np.cumsum]


def test_fixture_fails_a_wrong_rule(adcli_check_rule, adcli_rules):
    @adcli_rules.rule(np.cumsum, "f64[1d]")
    def wrong(x):
        return np.cumsum(x), lambda g: (g,)  # not the pullback of cumsum

    adcli_check_rule(np.cumsum, np.linspace(0.1, 1.0, 5))


@pytest.mark.adcli_rules("my_rules")
def test_marker_loads_a_rules_module(adcli_check_rule):
    assert [r for r in declared_rules() if r.target is np.cumsum]
    adcli_check_rule(np.cumsum, np.linspace(0.1, 1.0, 5))


@pytest.mark.adcli_rules("my_rules")
def test_marker_loads_it_again(adcli_check_rule):
    adcli_check_rule(np.cumsum, np.linspace(0.1, 1.0, 4))
'''


def test_plugin_fixtures_and_marker_in_a_users_suite(tmp_path):
    (tmp_path / "my_rules.py").write_text(textwrap.dedent(RULES))
    (tmp_path / "test_mine.py").write_text(textwrap.dedent(TESTS))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(tmp_path)],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert "4 passed" in res.stdout and "1 failed" in res.stdout, res.stdout
    assert "FAILED test_mine.py::test_fixture_fails_a_wrong_rule" in res.stdout
    # a short assertion naming the argument, its worst component and relative error, without
    # adcli's frames: the failure's section is the test's own lines and the message
    assert "the gradient w.r.t. argument 0 (a) is wrong: worst component [" in res.stdout
    assert "relative error" in res.stdout and "random direction" not in res.stdout
    section = res.stdout.split("test_fixture_fails_a_wrong_rule _")[1].split("short test summary")[0]
    assert len(section.splitlines()) < 25 and "adcli/" not in section.replace("adcli/rules", ""), section
