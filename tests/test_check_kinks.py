"""``check_rule`` at a sample on a kink: a correct rule passes (it gives the replaced rule's
gradient there, and finite differences' at a perturbed sample), a wrong one still fails, and a
function finite differences cannot judge anywhere near the sample is never called OK."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import adcli.rules
from adcli.cli import cli
from adcli.testing import GradientMismatch, check_rule

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "corpus")


def leaky(x):
    """Leaky ReLU by np.where: at 0 the derived rule takes the 0.1 branch, central finite
    differences the mean of both slopes (0.55)."""
    return np.where(x > 0, x, 0.1 * x)


def staircase(x):
    """Flat between jumps 1e-10 apart: finite differences see only jumps, at every step."""
    return np.floor(x * 1e10)


PULLBACKS = {
    "right": lambda x, g: g * np.where(x > 0, 1.0, 0.1),
    "doubled": lambda x, g: 2.0 * g * np.where(x > 0, 1.0, 0.1),
    "other convention": lambda x, g: g * np.where(x >= 0, 1.0, 0.1),  # a valid subgradient, not the program's
    "wrong off the kink": lambda x, g: g * np.where(x > 0, 1.0, 0.1) * (1.0 + x),  # right where x == 0 only
}


@pytest.fixture
def leaky_rule():
    def declare(pullback):
        @adcli.rules.rule(f"{__name__}:leaky", "f64[1d]")
        def fwd(x):
            return np.where(x > 0, x, 0.1 * x), lambda g: (PULLBACKS[pullback](x, g),)
        return adcli.rules.dispatch(leaky)

    yield declare
    adcli.rules.unregister(f"{__name__}:leaky")


ON_KINK = np.array([0.0, 0.0, 0.0, 0.0])


def test_the_derived_rule_itself_fails_finite_differences_on_the_kink():
    """What makes the sample hard: without a rule, the engine's own gradient fails there."""
    with pytest.raises(GradientMismatch):
        check_rule(leaky, ON_KINK, timing=False)
    check_rule(leaky, np.array([0.5, -0.3, 1.2, -2.0]), timing=False)


def test_a_right_rule_on_a_kink_passes_saying_how_it_was_judged(leaky_rule):
    report = check_rule(leaky_rule("right"), ON_KINK, timing=False)
    assert "finite differences at a perturbed sample" in report.checks and "agrees with derived rule" in report.checks
    assert "finite differences" not in report.checks  # not at the sample itself: it is not smooth
    assert report.nonsmooth.startswith("the sample is not smooth (the derived rule disagrees with finite differences")
    assert "agrees with the derived rule at the sample" in report.nonsmooth and report.nonsmooth in str(report)


def test_a_right_rule_on_a_smooth_sample_is_judged_as_before(leaky_rule):
    report = check_rule(leaky_rule("right"), np.array([0.5, -0.3, 1.2, -2.0]), timing=False)
    assert report.checks[0] == "finite differences" and report.nonsmooth == ""


@pytest.mark.parametrize("pullback, says", [
    ("doubled", "differs from the derived rule at this sample: worst component ["),
    ("other convention", "differs from the derived rule at this sample"),
    ("wrong off the kink", "at a perturbed sample, where the derived rule agrees with finite differences, the "
                           "gradient w.r.t. argument 0 (x) is wrong: worst component"),
])
def test_a_wrong_rule_on_a_kink_still_fails(leaky_rule, pullback, says):
    with pytest.raises(GradientMismatch) as info:
        check_rule(leaky_rule(pullback), ON_KINK, timing=False)
    message = str(info.value)
    assert message.startswith(f"{__name__}.leaky(f64[1d]): the sample is not smooth (the derived rule disagrees")
    assert says in message and "\n" not in message
    if pullback == "doubled":  # the output is weighted at random: twice the derived rule's value
        assert "(relative error 1); 4 of 4 component(s) differ" in message


def test_a_wrong_rule_on_a_smooth_sample_is_named_as_before(leaky_rule):
    with pytest.raises(GradientMismatch) as info:
        check_rule(leaky_rule("doubled"), np.array([0.5, -0.3, 1.2, -2.0]), timing=False)
    assert "not smooth" not in str(info.value) and "is wrong: worst component" in str(info.value)


def test_a_rule_finite_differences_cannot_judge_is_not_ok():
    """The rule gives the derived rule's (zero) gradient, but the function jumps within every
    step at the sample and at each perturbed sample: nothing confirms the rule, so it fails."""
    @adcli.rules.rule(f"{__name__}:staircase", "f64[1d]")
    def fwd(x):
        return np.floor(x * 1e10), lambda g: (np.zeros_like(x),)

    try:
        with pytest.raises(GradientMismatch, match="finite differences cannot judge the rule: the derived rule "
                                                   "disagrees with them at 3 perturbed samples too"):
            check_rule(adcli.rules.dispatch(staircase), np.array([0.25, 0.5]), timing=False)
    finally:
        adcli.rules.unregister(f"{__name__}:staircase")


FLUIDSIM = '''
import importlib.util
import sys

import numpy as np

from adcli.profiler import load_script
from adcli.rules import dispatch
from adcli.testing import GradientMismatch, check_rule

program = load_script({script!r})
spec = importlib.util.spec_from_file_location("fluidsim_rules", {rules!r})
spec.loader.exec_module(importlib.util.module_from_spec(spec))
smoke, _ = program.make_problem()
zero = np.zeros_like(smoke)  # the program's first call: sgd starts from zero velocities, on floor()'s kinks
try:
    print(check_rule(dispatch(program.simulate), zero, zero, smoke, 8, timing=False))
except GradientMismatch as exc:
    print("WRONG", exc)
'''


@pytest.mark.parametrize("factor", [1, 2])
def test_fluidsims_expert_rule_passes_on_its_kinked_first_call_and_a_doubled_one_fails(tmp_path, factor):
    rules = tmp_path / "fluidsim_rules.py"
    with open(os.path.join(CORPUS, "rules", "fluidsim_rules.py")) as f:
        text = f.read()
    # the whole time loop's rule (the file keeps it, unregistered, beside advect's and project's)
    text = text.replace("def simulate_rule(", '@adcli.rules.rule("__main__:simulate", "f64[2d]", "f64[2d]", "f64[2d]", '
                                              '"int")\ndef simulate_rule(')
    rules.write_text(text.replace("return b_vx, b_vy, b_smoke, None", f"return {factor} * b_vx, b_vy, b_smoke, None"))
    code = FLUIDSIM.format(script=os.path.join(CORPUS, "fluidsim.py"), rules=str(rules))
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    if factor == 1:
        assert "all checks passed" in run.stdout and "the sample is not smooth" in run.stdout, run.stdout
    else:
        assert run.stdout.startswith("WRONG") and "the sample is not smooth" in run.stdout, run.stdout
        assert "argument 0 (vx) differs from the derived rule at this sample" in run.stdout


PROGRAM = '''
import numpy as np

import adcli


def leaky(x):
    return np.where(x > 0, x, 0.1 * x)


def loss(x, w):
    return np.sum(w * leaky(x))


if __name__ == "__main__":
    x, w = np.zeros(5), np.linspace(1.0, 2.0, 5)  # training starts at 0: on the kink
    for _ in range(3):
        x = x - 0.1 * adcli.grad(loss)(x, w)
'''

RULES = '''
import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:leaky", "f64[1d]")
def leaky_rule(x):
    return np.where(x > 0, x, 0.1 * x), lambda g: ({factor} * g * np.where(x > 0, 1.0, 0.1),)
'''


@pytest.mark.parametrize("factor", [1, 2])
def test_adcli_check_on_a_kinked_profile_sample_says_how_it_judged(tmp_path, monkeypatch, factor):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "rules.py").write_text(RULES.format(factor=factor))
    assert CliRunner().invoke(cli, ["profile", "-o", "p.json", "prog.py"]).exit_code == 0
    try:
        res = CliRunner().invoke(cli, ["check", "rules.py", "--profile", "p.json", "--script", "prog.py", "--format",
                                       "json"])
    finally:
        adcli.rules.unregister("__main__:leaky")
    [result] = json.loads(res.stdout)["results"]
    if factor == 1:
        assert res.exit_code == 0 and result["status"] == "ok", res.output
        assert result["nonsmooth"].startswith("the sample is not smooth")
        assert "finite differences at a perturbed sample" in result["checks"]
    else:
        assert res.exit_code == 1 and result["status"] == "wrong" and result["nonsmooth"] is None
        assert "the sample is not smooth" in result["report"] and "differs from the derived rule" in result["report"]
