"""`adcli compare`: the profiles' rows, each side timed with repeats (on fake clocks: a test
asserts what was timed and how the ranges are read, never how long a shared machine took), the
change as a range, "within noise", --fail-if-slower; and a profile profiled with --rules taken
as the after of its program by `suggest` and `report`."""

import json
import os
import shutil
import sys

import pytest
from click.testing import CliRunner

from adcli.app import timing
from adcli.app.compare import Comparison, ComparisonRow
from adcli.app.timing import TimedGradient, Timing, change_range
from adcli.cli import cli
from adcli.data import store
from adcli.engine.signature import Signature
from adcli.measure import Spread
from adcli.render import render
from adcli.rules import rules_for, unregister
from adcli.units import duration_range, percent_range
from tests.support.node_clock import NodeCount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = '''import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:f", "f64[1d]")
def f_rule(x):
    def pullback(g):
        return (np.full_like(x, g),)
    return np.sum(x), pullback
'''


def invoke(*args, **kwargs):
    return CliRunner().invoke(cli, list(args), **kwargs)


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """The sum loop profiled before and after a hand-written rule for its loss: (folder, before,
    after, script, rules)."""
    d = tmp_path_factory.mktemp("loop")
    script, rules = str(d / "prog.py"), str(d / "rules.py")
    shutil.copy(os.path.join(ROOT, "profiles", "sum_loop_1000.py"), script)
    with open(rules, "w") as f:
        f.write(RULES)
    before, after = str(d / "before.json"), str(d / "after.json")
    assert invoke("profile", "-o", before, script).exit_code == 0
    try:
        res = invoke("profile", "--rules", rules, "-o", after, script)
        assert res.exit_code == 0, res.output
    finally:
        unregister("__main__:f")
    return d, before, after, script, rules


def test_a_profile_records_the_rules_files_it_was_profiled_with(loop):
    _, before, after, _, rules = loop
    assert store.load(before).rules == [] and store.load(after).rules == [rules]
    [f] = [s for s in store.load(after).signatures if s.function == "__main__.f"]
    assert f.served_by == "hand-written"


def _node_clock(fns, budget=0.2, before=None, **options):
    """``measure.interleaved`` on the clock of tape nodes: five rounds, each function's state
    put in place by its hook, then its gradient's nodes counted (one more per round, so the
    rounds differ)."""
    times = [[] for _ in fns]
    for r in range(5):
        for fn, hook, out in zip(fns, before, times):
            hook()
            counter = NodeCount()
            from adcli.engine import hooks
            hooks.install(counter)
            try:
                fn()
            finally:
                hooks.uninstall()
            out.append(1.0 + counter.nodes + r)
    return times


def test_compare_times_each_side_without_and_with_the_rules(loop, monkeypatch):
    _, before, after, script, rules = loop
    monkeypatch.setattr(timing, "interleaved", _node_clock)
    res = invoke("compare", before, after, "--script", script, "--rules", rules, "--format", "json")
    assert res.exit_code == 0, res.output
    t = json.loads(res.stdout)["timing"]
    # before: the loop's 2000 tape nodes (the rule out of the registry); after: the rule's one
    assert t["before"]["low_s"] > 2000 and t["after"]["high_s"] < 10 and t["before"]["rounds"] == 5
    assert t["change_low"] < t["change_high"] < -0.99 and t["within_noise"] is False
    assert [g["signature"] for g in t["gradients"]] == ["__main__.f(f64[1d])"] and t["rules"] == [rules]
    assert json.loads(res.stdout)["verdict"] == "faster"
    assert not rules_for("__main__:f")  # the rules are out of the registry again

    text = invoke("compare", before, after, "--script", script, "--rules", rules).stdout
    assert "timed in 5 rounds" in text and "faster" in text and "one run each" not in text
    markdown = invoke("compare", before, after, "--script", script, "--rules", rules, "--format", "markdown").stdout
    assert "- change  -100%, faster" in markdown and "- before  " in markdown


def _scripted(before_s, after_s):
    """A fake ``interleaved`` whose rounds take the given seconds (the hooks and gradients still run once)."""
    def fake(fns, budget=0.2, before=None, **options):
        for fn, hook in zip(fns, before):
            hook()
            fn()
        return [list(before_s), list(after_s)]
    return fake


@pytest.mark.parametrize("before_s, after_s, verdict, status", [
    ([1.0, 1.1, 1.2, 1.3, 1.4], [1.1, 1.2, 1.3, 1.4, 1.5], "within noise", 0),
    ([1.0, 1.01, 1.02, 1.03, 1.04], [1.2, 1.21, 1.22, 1.23, 1.24], "slower", 1),
    ([1.0, 1.01, 1.02, 1.03, 1.04], [0.6, 0.61, 0.62, 0.63, 0.64], "faster", 0),
])
def test_within_noise_when_the_ranges_overlap_and_fail_if_slower(loop, monkeypatch, before_s, after_s, verdict,
                                                                 status):
    _, before, after, script, rules = loop
    monkeypatch.setattr(timing, "interleaved", _scripted(before_s, after_s))
    args = ["compare", before, after, "--script", script, "--rules", rules]
    res = invoke(*args, "--fail-if-slower", "5%")
    assert res.exit_code == status, res.output
    assert res.stdout.rstrip().endswith(f", {verdict}")
    if status:
        assert "slower beyond noise by 17% at least, more than --fail-if-slower 5%" in res.stderr
    assert invoke(*args, "--fail-if-slower", "50").exit_code == 0  # slower, but by less than 50%
    data = json.loads(invoke(*args, "--format", "json").stdout)
    assert data["verdict"] == verdict and data["timing"]["within_noise"] == (verdict == "within noise")


def test_fail_if_slower_needs_timing_and_timing_needs_the_rules(loop):
    _, before, after, script, rules = loop
    res = invoke("compare", before, after, "--fail-if-slower", "5%")
    assert res.exit_code == 2 and "--script" in res.output
    res = invoke("compare", before, after, "--script", script)
    assert res.exit_code == 2 and f"was profiled with ({rules})" in res.output and "Traceback" not in res.output
    assert invoke("compare", before, after, "--script", script, "--fail-if-slower", "five").exit_code == 2


def test_untimed_compare_says_it_is_one_run_each(loop):
    _, before, after, _, _ = loop
    res = invoke("compare", before, after)
    assert res.exit_code == 0 and "one run each" in res.stdout and "--script SCRIPT --rules FILE" in res.stdout
    data = json.loads(invoke("compare", before, after, "--format", "json").stdout)
    assert data["verdict"] == "untimed" and data["timing"] is None


def _comparison(notes=(), within=False):
    sig = Signature.parse("__main__.loss_with_a_long_name(f64[2d], f64[1d], f64[1d], f64[2d,F], float)")
    b = Spread(0.004, 0.005, 0.0052, 0.0054, 0.009, 40)
    a = b if within else Spread(0.002, 0.003, 0.0031, 0.0032, 0.004, 40)
    grads = [TimedGradient(sig, 100, b, a), TimedGradient(sig, 3, b, a)]
    t = Timing(["rules_with_a_rather_long_file_name.py"], grads, b, a)
    rows = [ComparisonRow(sig, 0.52, 0.31, 1_000_000, 900_000, "derived", "hand-written")]
    return Comparison(rows, 0.6, 0.4, (100, 100), list(notes), t)


def test_compare_fits_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    note = ("the runs took different numbers of gradients (100 and 120): the times are per run, not per gradient, "
            "and a note this long must wrap")
    text = render(_comparison([note]), "table")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "per run, not per gradient, and a note this long must wrap" in " ".join(text.split())
    assert "change  -36% to -44%, faster" in text


def test_verdict_colours_on_a_terminal_and_none_with_no_color(monkeypatch):
    from adcli.render import console

    monkeypatch.setattr(console, "COLOR", True)
    styled = render(_comparison(), "table")
    assert "\x1b[" in styled and "faster\x1b[0m" in styled
    assert "\x1b[" in render(_comparison(within=True), "table")
    monkeypatch.setattr(console, "COLOR", None)
    monkeypatch.setattr(console.os, "isatty", lambda fd: True)  # a terminal: styled unless NO_COLOR
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "faster\x1b[0m" in render(_comparison(), "table")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in render(_comparison(), "table")


def test_ranges_in_words():
    assert duration_range(0.00505, 0.00543) == "5.05–5.43 ms"
    assert duration_range(0.00098, 0.00102) == "980 µs–1.02 ms"
    assert duration_range(0.002, 0.002) == "2 ms"
    assert percent_range(-0.44, -0.38) == "-38% to -44%"  # the end nearer zero first
    assert percent_range(0.09, 0.03) == "+3% to +9%"
    assert percent_range(-0.02, 0.05) == "-2% to +5%"
    assert percent_range(-0.401, -0.399) == "-40%"
    b, a = Spread(1, 2, 2.5, 3, 4, 9), Spread(1, 2.5, 3, 3.5, 4, 9)
    assert change_range(b, a) == (2.5 / 3 - 1, 3.5 / 2 - 1) and b.overlaps(a)
    assert not b.overlaps(Spread(3, 3.1, 3.2, 3.3, 3.4, 9))


def test_suggest_takes_a_profile_with_rules_as_the_after_of_its_program(loop):
    _, before, after, _, rules = loop
    alone = invoke("suggest", before, "--format", "json")
    assert [s["signature"] for s in json.loads(alone.stdout)] == ["__main__.f(f64[1d])"]
    both = invoke("suggest", before, after, "--format", "json")
    assert both.exit_code == 0, both.output
    # the rule serves f in the after profile: nothing left to advise, and f is not advised again
    assert json.loads(both.stdout) == json.loads(invoke("suggest", after, "--format", "json").stdout) == []
    note = " ".join(both.stderr.split())
    assert f"{after} is {before}'s program profiled with --rules {rules}: advice from {after}" in note
    assert "not as a second workload" in note


def test_report_of_a_before_and_its_after_shows_the_comparison(loop, tmp_path):
    _, before, after, _, _ = loop
    page = str(tmp_path / "r.html")
    assert invoke("report", before, after, "-o", page).exit_code == 0
    html = open(page).read()
    assert 'id="compare0"' in html and 'id="compare0-rows"' in html
    row = html[html.index('id="compare0-rows"'):]
    assert "__main__.f(f64[1d])" in row and "derived" in row and "hand-written" in row
    assert "one run each" in html and "adcli compare --script SCRIPT --rules FILE" in html
    alone = str(tmp_path / "alone.html")
    assert invoke("report", before, "-o", alone).exit_code == 0
    assert 'id="compare0"' not in open(alone).read()


def test_suggest_of_a_before_and_its_after_says_so_above_the_table(loop):
    _, before, after, _, rules = loop
    for fmt in ("table", "markdown"):
        res = invoke("suggest", before, after, "--all", "--format", fmt)
        assert res.exit_code == 0, res.output
        text = " ".join(res.stdout.split())
        assert "not as a second workload" in text and "not as a second workload" not in res.stderr


CLOSURE_PROGRAM = '''
import numpy as np

import adcli


class Model:
    def __init__(self, scale):
        self.scale = scale


def make(data):
    def objective(w, model):
        return np.sum((model.scale * w * data) ** 2)
    return objective


if __name__ == "__main__":
    objective = make(np.linspace(0.0, 1.0, 8))
    for _ in range(3):
        adcli.grad(objective)(np.ones(8), Model(2.0))
'''

CLOSURE_RULES = '''
import inspect

import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:make.<locals>.objective", "f64[1d]", "obj(__main__.Model)")
def objective_rule(w, model):
    data = inspect.getclosurevars(adcli.rules.original("__main__:make.<locals>.objective")).nonlocals["data"]
    r = model.scale * w * data
    return np.sum(r ** 2), lambda g: (g * 2.0 * r * model.scale * data, None)
'''


def test_compare_times_a_closure_handed_to_grad_found_where_the_program_calls_it(tmp_path, monkeypatch):
    # the root is a closure (not found by name) taking an object the profile cannot record: both
    # come from the program's call site (profiler/callsite.py), as adcli check finds them
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "prog.py").write_text(CLOSURE_PROGRAM)
    (tmp_path / "rules.py").write_text(CLOSURE_RULES)
    assert invoke("profile", "--no-replay", "-o", "before.json", "prog.py").exit_code == 0
    try:
        assert invoke("profile", "--no-replay", "--rules", "rules.py", "-o", "after.json", "prog.py").exit_code == 0
        unregister("__main__:make.<locals>.objective")  # (compare loads the rules file itself)
        res = invoke("compare", "before.json", "after.json", "--script", "prog.py", "--rules", "rules.py",
                     "--budget", "0.05", "--format", "json")
    finally:
        unregister("__main__:make.<locals>.objective")
    assert res.exit_code == 0, res.output
    timing = json.loads(res.stdout)["timing"]
    assert not timing["untimed"], timing["untimed"]
    assert [g["signature"] for g in timing["gradients"]] == ["__main__:make.<locals>.objective(f64[1d], obj(__main__.Model))"]
