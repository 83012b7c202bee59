"""``adcli check`` of rules for closures and methods (issue "From advice to a checked rule", item 3):
the function is found at the program's own call site (the script run to its first call inside a
gradient), checked on the profile's samples (a method's ``self`` from the call site), and OK only
when the rule under test served; a wrong rule FAILS naming the argument. A closure or method
outside the files the user passed is refused before the program runs, whatever the profile says."""

import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.profiler.callsite import CallSiteError, first_call
from adcli.rules import unregister

# `objective` is a closure created anew by each call of `total` (no module keeps it); `energy` a
# method whose `self` a profile cannot record; `shifted` a closure of a helper module.
PROGRAM = '''
import numpy as np

import adcli
from {helper} import make_shifted


class Model:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, theta, x):
        return self.scale * np.sum(np.sin(x @ theta) ** 2)


def make(data):
    def objective(theta):
        return np.sum(np.tanh(data @ theta)) + Model(2.0).energy(theta, data)

    return objective


def total(theta, data):
    return make(data)(theta) + make_shifted(0.5)(theta)


def main():
    data = np.random.default_rng(0).standard_normal((6, 3))
    g = adcli.grad(total)
    for _ in range(3):
        g(np.linspace(0.1, 0.3, 3){dtype}, data{dtype})
    print("trained")


if __name__ == "__main__":
    main()
'''

HELPER = '''
import numpy as np


def make_shifted(c):
    def shifted(theta):
        open({marker!r}, "a").close()  # proof of a call
        return np.sum((theta - c) ** 2)

    return shifted
'''

CLOSURE_RULE = '''
import inspect

import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:make.<locals>.objective", "f64[1d]")
def objective_rule(theta):
    f = adcli.rules.original("__main__:make.<locals>.objective")  # the closure the call was made to
    data = inspect.getclosurevars(f).nonlocals["data"]
    z = data @ theta

    def pullback(g):
        return ({factor} * g * (data.T @ (1.0 - np.tanh(z) ** 2) + 2.0 * data.T @ np.sin(2.0 * z)),)

    return f(theta), pullback
'''

METHOD_RULE = '''
import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:Model.energy", "obj(__main__.Model)", "f64[1d]", "f64[2d]")
def energy_rule(self, theta, x):
    u = x @ theta

    def pullback(g):
        s = g * self.scale * np.sin(2.0 * u)
        return None, {factor} * (x.T @ s), lambda: np.outer(s, theta)

    return self.scale * np.sum(np.sin(u) ** 2), pullback
'''

HELPER_RULE = '''
import numpy as np

import adcli.rules


@adcli.rules.rule("{helper}:make_shifted.<locals>.shifted", "f64[1d]")
def shifted_rule(theta):
    f = adcli.rules.original("{helper}:make_shifted.<locals>.shifted")
    return f(theta), lambda g: (2.0 * g * (theta - 0.5),)
'''

TARGETS = ("__main__:make.<locals>.objective", "__main__:Model.energy")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def program(tmp_path, monkeypatch, request):
    """prog.py and its helper module (a name of its own per test), profiled; the rules and the
    helper module are removed afterwards."""
    helper = f"shift_helpers_{abs(hash(request.node.name)) % 10**8}"
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / f"{helper}.py").write_text(HELPER.format(marker=str(tmp_path / "called")))
    (tmp_path / "prog.py").write_text(PROGRAM.format(helper=helper, dtype=""))
    res = invoke("profile", "--no-replay", "-o", "p.json", "prog.py")
    assert res.exit_code == 0, res.output
    (tmp_path / "called").unlink()
    yield tmp_path, helper
    for target in (*TARGETS, f"{helper}:make_shifted.<locals>.shifted"):
        unregister(target)
    sys.modules.pop(helper, None)


def check(folder, text, *options):
    (folder / "rules.py").write_text(textwrap.dedent(text))
    return invoke("check", "rules.py", "--profile", "p.json", "--script", "prog.py", *options)


@pytest.mark.parametrize("rules, argument", [(CLOSURE_RULE, "argument 0 (theta)"),
                                             (METHOD_RULE, "argument 1 (theta)")], ids=["closure", "method"])
def test_a_wrong_rule_for_a_closure_or_a_method_fails_naming_the_argument(program, rules, argument):
    folder, _ = program
    res = check(folder, rules.format(factor=2.0))
    assert res.exit_code == 1, res.output
    assert res.output.startswith("WRONG") and argument in res.output and "(relative error 1)" in res.output, res.output


@pytest.mark.parametrize("rules, target", [(CLOSURE_RULE, "__main__:make.<locals>.objective(f64[1d])"),
                                           (METHOD_RULE, "__main__:Model.energy(obj(__main__.Model), f64[1d], f64[2d])")],
                         ids=["closure", "method"])
def test_a_right_rule_for_a_closure_or_a_method_is_ok_having_served_the_programs_call(program, rules, target):
    folder, _ = program
    res = check(folder, rules.format(factor=1.0), "--format", "json")
    assert res.exit_code == 0, res.output
    [result] = json.loads(res.stdout)["results"]
    assert result["status"] == "ok" and result["served_by"] == f"<hand-written rule {target}>", result
    assert result["on"] == "profile samples at the program's call site"
    assert "finite differences" in result["checks"] and "agrees with derived rule" in result["checks"]
    assert "trained" not in res.stdout  # the program stopped at the call, its output dropped


def test_a_closure_of_a_helper_module_passed_with_module_is_found_at_its_call_site(program):
    folder, helper = program
    res = check(folder, HELPER_RULE.format(helper=helper), "--module", f"{helper}.py")
    assert res.exit_code == 0 and res.output.startswith("OK"), res.output


def test_a_closure_of_a_module_not_passed_is_refused_before_the_program_runs(program):
    """The helper's closure is the user's only if they say so (--module): without it, status 2,
    and neither the program nor the closure ran (the closure leaves a file when called)."""
    folder, helper = program
    res = check(folder, HELPER_RULE.format(helper=helper))
    assert res.exit_code == 2 and "refusing to check" in res.output, res.output
    assert f"{helper}:make_shifted.<locals>.shifted" in res.output and "--module FILE" in res.output
    assert not (folder / "called").exists()


def test_a_crafted_profile_naming_a_closure_of_another_module_calls_nothing(program):
    """The profile names the helper's closure (and makes its sample complete); the rules file has
    no rule for it: nothing runs the program or the closure, and the check is of the rules' own."""
    folder, helper = program
    doc = json.loads((folder / "p.json").read_text())
    names = [s["signature"] for s in doc["signatures"]]
    assert any(f"{helper}:make_shifted.<locals>.shifted" in n for n in names), names
    for s in doc["signatures"]:  # point the method's signature (whose sample lacks self) at the helper's closure
        if s["signature"].startswith("__main__:Model.energy"):
            s["signature"] = f"{helper}:make_shifted.<locals>.shifted(f64[1d])"
    (folder / "p.json").write_text(json.dumps(doc))
    res = check(folder, """
        import numpy as np
        import adcli.rules


        @adcli.rules.rule(np.cumsum, "f64[1d]")
        def cumsum_rule(x):
            return np.cumsum(x), lambda g: (np.cumsum(g[::-1])[::-1],)


        def test_cumsum():
            from adcli.testing import check_rule
            check_rule(np.cumsum, np.linspace(0.1, 1.0, 5))
        """)
    unregister(__import__("numpy").cumsum)
    assert res.exit_code == 0 and res.output.startswith("OK"), res.output
    assert not (folder / "called").exists()


def test_a_closure_the_program_no_longer_calls_fails_naming_the_nearest_checkable_target(program):
    """The script changed since it was profiled (float32 data: another signature): the call
    site is not found, and the FAIL names the caller that check can run on samples alone."""
    folder, helper = program
    (folder / "prog.py").write_text(PROGRAM.format(helper=helper, dtype=".astype(np.float32)"))
    res = check(folder, CLOSURE_RULE.format(factor=1.0))
    assert res.exit_code == 1 and res.output.startswith("FAIL"), res.output
    out = " ".join(res.output.split())
    assert "prog.py ran to its end without calling __main__:make.<locals>.objective(f64[1d])" in out, out
    assert "the nearest checkable target is __main__.total(f64[1d], f64[2d])" in out, out


def test_first_call_gives_the_closure_with_its_captured_variables_and_a_methods_self(program):
    folder, _ = program
    site = first_call("prog.py", "__main__:make.<locals>.objective(f64[1d])")
    assert site.func.__qualname__ == "make.<locals>.objective" and site.args[0].tolist() == [0.1, 0.2, 0.3]
    assert site.func.__closure__[0].cell_contents.shape == (6, 3)  # `data`
    site = first_call("prog.py", "__main__:Model.energy(obj(__main__.Model), f64[1d], f64[2d])")
    assert type(site.args[0]).__name__ == "Model" and site.args[0].scale == 2.0
    with pytest.raises(CallSiteError, match="ran to its end without calling"):
        first_call("prog.py", "__main__:Model.energy(obj(__main__.Model), f32[1d], f64[2d])")
