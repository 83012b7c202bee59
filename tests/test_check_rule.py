"""``adcli.testing.check_rule``: it checks the rule under test or fails saying why that rule did
not serve; a wrong gradient is named by its argument, worst component and relative error."""

import re

import numpy as np
import pytest

import adcli.rules
from adcli.engine.registry import declared_for
from adcli.testing import GradientMismatch, RuleNotServed, check_grad, check_rule


def scaled_sum(x, axis=-1):
    return np.sum(x * 3.0, axis=axis)


@pytest.fixture
def declared():
    made = []

    def declare(target, *types, factor=3.0):
        @adcli.rules.rule(target, *types)
        def fwd(x, axis=-1):
            return np.sum(x * 3.0, axis=axis), lambda g: (factor * np.broadcast_to(np.expand_dims(g, axis), x.shape),)
        made.append(target)

    yield declare
    for t in made:
        adcli.rules.unregister(t)


def test_a_call_no_declared_rule_matches_fails_instead_of_checking_the_derived_rule(declared):
    declared(f"{__name__}:scaled_sum", "f64[2d]", "axis=int")
    target = adcli.rules.dispatch(scaled_sum)
    with pytest.raises(RuleNotServed, match=r"signature mismatch: the call is .*scaled_sum\(f64\[2d\]\), declared rule"):
        check_rule(target, np.ones((3, 2)), timing=False)
    report = check_rule(target, np.ones((3, 2)), kwargs={"axis": 1}, timing=False)
    assert report.rule == f"<hand-written rule {__name__}.scaled_sum(f64[2d], axis=int)>"


def test_rule_argument_names_the_rule_that_must_serve(declared):
    declared(np.cumsum, "f64[2d]")  # a rule for another signature of cumsum
    [rule] = declared_for(np.cumsum)
    with pytest.raises(RuleNotServed, match=r"the call is numpy.cumsum\(f64\[1d\]\)"):
        check_rule(np.cumsum, np.linspace(0.1, 1.0, 5), rule=rule, timing=False)


def test_a_wrong_rule_names_the_argument_its_worst_component_and_relative_error(declared):
    declared(f"{__name__}:scaled_sum", "f64[2d]", "axis=int", factor=6.0)  # twice the right pullback
    target = adcli.rules.dispatch(scaled_sum)
    with pytest.raises(GradientMismatch) as info:
        check_rule(target, np.ones((3, 2)), kwargs={"axis": 1}, timing=False)
    message = str(info.value)
    # every component twice the finite difference (the output is weighted at random)
    found = re.search(r"argument 0 \(x\) is wrong: worst component \[\d, \d\]: the rule (\S+), finite differences "
                      r"(\S+) \(relative error 1\); 6 of 6 component\(s\) differ", message)
    assert found and float(found[1]) == pytest.approx(2 * float(found[2]), rel=1e-6), message
    assert "random direction" not in message and "scalar()" not in message and "\n" not in message


def test_check_grad_names_the_worst_component_of_a_pytree_argument():
    def f(params):
        return np.sum(params["W"] ** 2) + adcli.stop_gradient(params["b"][1]) * params["b"][1]

    with pytest.raises(GradientMismatch) as info:
        check_grad(f, {"W": np.ones((2, 2)), "b": np.array([1.0, 2.0])})
    message = str(info.value)
    assert "argument 0 (params)" in message and "worst component ['b'][1]: adcli 2, finite differences 4" in message
    assert "1 of 6 component(s) differ" in message


def make_scaled(c):
    def scaled(x):
        return np.sum(x * c)

    return scaled


@pytest.mark.parametrize("factor, ok", [(3.0, True), (6.0, False)])
def test_a_closure_at_a_dispatch_point_is_checked_by_its_rule(factor, ok):
    """A rule declared by name for a closure serves it at a dispatch point, and check_rule checks
    that rule (before, a nested function had no key: "no rule serves")."""
    target = f"{__name__}:make_scaled.<locals>.scaled"

    @adcli.rules.rule(target, "f64[1d]")
    def fwd(x):
        return np.sum(x * 3.0), lambda g: (factor * g * np.ones_like(x),)

    try:
        call = adcli.rules.dispatch(make_scaled(3.0))
        if ok:
            report = check_rule(call, np.ones(4), timing=False)
            assert report.rule == f"<hand-written rule {target}(f64[1d])>"
        else:
            with pytest.raises(GradientMismatch, match=r"argument 0 \(x\).*relative error 1\)"):
                check_rule(call, np.ones(4), timing=False)
        with pytest.raises(RuleNotServed, match="the rule served 0 of"):  # not a dispatch point: not served
            check_rule(make_scaled(3.0), np.ones(4), timing=False)
    finally:
        adcli.rules.unregister(target)
