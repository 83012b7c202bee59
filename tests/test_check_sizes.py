"""``adcli check --sizes``: the data arguments are scaled along their size axis and the parameters
left as they are (inferred from the shapes, or said with ``--scale``), and the report says which."""

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from adcli.app.scaling import Scaled, ScaleError, apply, describe_scaling, parse_scale, plan, size_dimension
from adcli.cli import cli
from adcli.rules import unregister


@pytest.mark.parametrize("shapes, length", [
    ([(2,), (6,), (6,), (6,)], 6),  # spring-mass: theta (2,) and the masses' state
    ([(5,), (40, 5), (40,)], 40),  # logistic regression w, X, t: N and D both shared; N leads the largest
    ([(30, 4, 3), (30, 4, 2)], 30),  # a sequence (T, B, D): the leading axis of the largest
    ([(50,)], 50),  # one argument: its own axis
    ([(1, 7)], 7),  # a length above 1 first
    ([], None),
])
def test_the_size_dimension_is_the_length_most_arguments_share(shapes, length):
    assert size_dimension(shapes) == length


def test_the_parameters_are_left_and_the_data_scaled_along_their_first_axis_of_that_length():
    names = ["theta", "x0", "grid", "n"]
    values = [np.zeros(2), np.zeros(6), np.zeros((3, 6)), 40]
    assert plan(names, values) == [Scaled("theta", (2,), None, "inferred"), Scaled("x0", (6,), 0, "inferred"),
                                   Scaled("grid", (3, 6), 1, "inferred")]
    scaled = apply(values, plan(names, values), names, 4)
    assert [np.shape(v) for v in scaled] == [(2,), (24,), (3, 24), ()] and scaled[3] == 40


def test_scale_overrides_by_name_or_position_and_the_rest_is_inferred():
    names, values = ["theta", "x", "y"], [np.zeros(2), np.zeros(6), np.zeros(6)]
    got = plan(names, values, {"theta": 0, "2": None})
    assert got == [Scaled("theta", (2,), 0, "--scale"), Scaled("x", (6,), 0, "inferred"), Scaled("y", (6,), None, "--scale")]
    assert describe_scaling(got) == ("scaled theta (2,) along axis 0 (--scale); x (6,) along axis 0 (inferred); "
                                     "not scaled: y (6,)")
    with pytest.raises(ScaleError, match=r"--scale x:1: x has shape \(6,\), no axis 1"):
        plan(names, values, {"x": 1})


@pytest.mark.parametrize("text, axes", [("x:0,theta:none", {"x": 0, "theta": None}), (" 0 : 1 ", {"0": 1})])
def test_parse_scale(text, axes):
    assert parse_scale(text) == axes


@pytest.mark.parametrize("text, says", [("x", "give NAME:AXIS or NAME:none"), ("x:-1", "give NAME:AXIS"),
                                        ("x:0,x:none", "names x twice"), ("x:0;y:1", "give NAME:AXIS")])
def test_a_scale_that_does_not_parse_says_how_to_write_it(text, says):
    with pytest.raises(ScaleError, match=says):
        parse_scale(text)


PROGRAM = '''
import numpy as np

import adcli


def fit_loss(theta, x, y):
    features = np.stack([x, np.ones_like(x)])  # theta (2,) @ (2, n): theta is no data to repeat
    return np.sum((theta @ features - y) ** 2)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal(6)
    y = 2.0 * x + 1.0 + 0.1 * rng.standard_normal(6)
    theta = np.zeros(2)
    for _ in range(3):
        theta = theta - 0.01 * adcli.grad(fit_loss)(theta, x, y)
'''

RULES = '''
import numpy as np

import adcli.rules


@adcli.rules.rule("__main__:fit_loss", "f64[1d]", "f64[1d]", "f64[1d]")
def fit_rule(theta, x, y):
    r = theta[0] * x + theta[1] - y
    return np.sum(r ** 2), lambda g: (2 * g * np.array([r @ x, r.sum()]), 2 * g * theta[0] * r, -2 * g * r)
'''


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fit")
    (folder / "prog.py").write_text(PROGRAM)
    (folder / "rules.py").write_text(RULES)
    res = CliRunner().invoke(cli, ["profile", "-o", str(folder / "p.json"), str(folder / "prog.py")])
    assert res.exit_code == 0, res.output
    return folder


@pytest.fixture
def check(fitted, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))

    def run(*options):
        try:
            return CliRunner().invoke(cli, ["check", str(fitted / "rules.py"), "--profile", str(fitted / "p.json"),
                                            "--script", str(fitted / "prog.py"), "--sizes", "1,4", *options])
        finally:
            unregister("__main__:fit_loss")

    return run


def test_sizes_scale_the_data_and_leave_theta(check):
    """Before, theta (2,) became (8,) and no size but 1 could be timed."""
    res = check("--format", "json")
    assert res.exit_code == 0, res.output
    [ev] = json.loads(res.stdout)["evidence"]
    assert [(s["argument"], s["axis"], s["by"]) for s in ev["scaled"]] == [
        ("theta", None, "inferred"), ("x", 0, "inferred"), ("y", 0, "inferred")]
    assert ev["scaling"] == "scaled x (6,), y (6,) along axis 0 (inferred); not scaled: theta (2,)"
    assert [r["shapes"] for r in ev["rows"]] == ["(2,), (6,), (6,)", "(2,), (24,), (24,)"]
    assert all(r["note"] == "" and r["rule_s"] > 0 and r["without_s"] > 0 for r in ev["rows"])
    table = check()
    assert "scaled x (6,), y (6,) along axis 0 (inferred); not scaled: theta (2,)" in table.output


def test_scale_says_which_arguments_to_scale(check):
    res = check("--scale", "theta:0", "--format", "json")
    [ev] = json.loads(res.stdout)["evidence"]
    assert ev["scaled"][0] == {"argument": "theta", "shape": [2], "axis": 0, "by": "--scale"}
    assert ev["rows"][1]["shapes"] == "(8,), (24,), (24,)" and ev["rows"][1]["note"].startswith("not at this size")
    res = check("--scale", "x:none,2:none", "--format", "json")
    [ev] = json.loads(res.stdout)["evidence"]
    assert ev["scaling"] == "no argument scaled; not scaled: theta (2,), x (6,), y (6,)"
    assert ev["rows"][1]["shapes"] == "(2,), (6,), (6,)"


@pytest.mark.parametrize("scale, says", [
    ("thetta:none", "adcli: error: --scale names thetta, which no rule checked with --sizes takes (their arguments: "
                    "theta, x, y)"),
    ("x:1", "adcli: error: --scale x:1: x has shape (6,), no axis 1"),
    ("x=0", "adcli: error: --scale 'x=0': give NAME:AXIS or NAME:none, e.g. x:0,theta:none"),
])
def test_a_scale_that_does_not_fit_is_one_line_and_status_2(check, scale, says):
    res = check("--scale", scale)
    assert res.exit_code == 2 and res.stderr.strip() == says, res.output


def test_scale_needs_sizes(fitted):
    res = CliRunner().invoke(cli, ["check", str(fitted / "rules.py"), "--scale", "x:0"])
    assert res.exit_code == 2 and "give --sizes too" in res.output
