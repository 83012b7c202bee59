"""Declaring rules: exact signatures, unions, conflicts, contract checks, user functions."""

import numpy as np
import pytest

import adcli
from adcli.errors import RuleError
from adcli.rules import dispatch, register, rule, rules_for, unregister
from adcli.testing import GradientMismatch, check_grad, check_rule
from tests.support import usermodel
from tests.support.recorder import recording

rng = np.random.default_rng(3)
A, B = rng.standard_normal((3, 2)), rng.standard_normal((4, 5))


def kron_fwd(a, b):
    def pullback(g):
        (m, n), (p, q) = a.shape, b.shape
        G = g.reshape(m, p, n, q)
        return np.einsum("ipjq,pq->ij", G, b), np.einsum("ipjq,ij->pq", G, a)

    return np.kron(a, b), pullback


@pytest.fixture(autouse=True)
def clean_registry():
    yield
    for target in (np.kron, np.sum, np.sin, np.cumsum, usermodel.energy, "__main__:tiny", "tests.support.usermodel:energy"):
        unregister(target)


def record_tape(fn):
    return recording(fn)[1][-1]


def test_hand_written_rule_serves_its_signature_and_agrees_with_the_derived_rule():
    register(np.kron, ("f64[2d]", "f64[2d]"), kron_fwd)
    report = check_rule(np.kron, A, B, repeats=3)
    assert "hand-written rule numpy.kron(f64[2d], f64[2d])" in report.rule
    assert "agrees with derived rule" in report.checks
    assert report.cost is not None and report.fallback_cost is not None


def test_union_of_types_expands_to_one_signature_each():
    rules = register(np.kron, ("f64[2d]", ("f64[2d]", "f64[2d,strided]", "f64[2d,F]")), kron_fwd)
    assert {r.key for r in rules} == {("f64[2d]", "f64[2d]"), ("f64[2d]", "f64[2d,strided]"), ("f64[2d]", "f64[2d,F]")}
    strided = rng.standard_normal((8, 10))[::2, ::2]
    check_rule(np.kron, A, strided, timing=False)
    assert len(rules_for(np.kron)) == 3


def test_a_rule_does_not_serve_other_signatures():
    register(np.kron, ("f64[2d]", "f64[2d]"), kron_fwd)
    tape = record_tape(lambda: adcli.grad(lambda a: np.sum(np.kron(a, np.ones(3))))(np.ones(2)))
    assert not any(type(n[1]).__name__ == "Rule" for n in tape.nodes if n is not None)


def test_second_rule_for_a_signature_is_an_error_unless_replacing():
    register(np.kron, ("f64[2d]", "f64[2d]"), kron_fwd)
    with pytest.raises(RuleError, match=r"numpy\.kron\(f64\[2d\], f64\[2d\]\) already has a hand-written rule"):
        register(np.kron, ("f64[2d]", "f64[2d]"), kron_fwd)
    register(np.kron, ("f64[2d]", "f64[2d]"), kron_fwd, replace=True)


@pytest.mark.parametrize("bad", ["array", "any", "f65[2d]", "float64", "f64[2x]", "f64[1d,F]", "ndarray"])
def test_unknown_or_abstract_types_are_refused(bad):
    with pytest.raises(RuleError):
        register(np.kron, (bad, "f64[2d]"), kron_fwd)


def test_a_huge_union_is_not_concrete():
    many = tuple(f"f{b}[{n}d]" for b in (16, 32, 64) for n in range(3))
    with pytest.raises(RuleError, match="concrete"):
        register(np.kron, (many, many), kron_fwd)


def test_lambdas_cannot_be_targets():
    with pytest.raises(RuleError, match="lambda"):
        register(lambda x: x, ("f64[1d]",), kron_fwd)


def test_pullback_returning_the_wrong_shape_fails_when_it_happens():
    @rule(np.sin, "f64[1d]")
    def bad(x):
        return np.sin(x), lambda g: (np.cos(x)[:, None] * g,)  # (n, 1): would broadcast

    with pytest.raises(RuleError, match=r"numpy\.sin\(f64\[1d\]\).*shape \(3, 3\).*shape \(3,\)"):
        adcli.grad(lambda x: np.sum(np.sin(x)))(np.ones(3))


def test_pullback_returning_the_wrong_dtype_fails():
    @rule(np.sin, "f32[1d]")
    def bad(x):
        return np.sin(x), lambda g: ((g * np.cos(x)).astype(np.float64),)

    with pytest.raises(RuleError, match="float64 cotangent.*float32"):
        adcli.grad(lambda x: np.sum(np.sin(x)))(np.ones(3, np.float32))


def test_a_wrong_hand_written_rule_is_caught_by_check_rule():
    @rule(np.sin, "f64[2d]")
    def wrong(x):
        return np.sin(x), lambda g: (2.0 * g * np.cos(x),)

    with pytest.raises(GradientMismatch, match="finite differences"):
        check_rule(np.sin, A, timing=False)


def test_in_place_accumulating_rule():
    @rule(np.sum, "f64[2d]", accumulate=True)
    def sum_into(x):
        def pullback(g, buffers):
            buffers[0][...] += g  # no new array: adds into the engine's buffer

        return np.sum(x), pullback

    report = check_rule(np.sum, A, timing=False)
    assert "accumulation" in report.checks


def test_rule_for_a_user_function_is_used_by_the_engine():
    calls = []

    @rule(usermodel.energy, "f64[1d]", "float")
    def energy_rule(x, s):
        calls.append(1)

        def pullback(g):
            return g * (2 * s * x + np.cos(x)), float(g * np.sum(x ** 2))

        return usermodel.energy.__adcli_original__(x, s), pullback

    x = rng.standard_normal(5)
    tape = record_tape(lambda: adcli.grad(usermodel.model, argnums=(0, 1))(x, 1.5))
    assert calls == [1]
    # leaves x and s, one rule node for energy, one multiply by 2.0: the body was not recorded
    kinds = [None if n is None else type(n[1]).__name__ for n in tape.nodes]
    assert kinds.count("Rule") == 1 and len(tape.nodes) == 4, kinds
    check_grad(usermodel.model, x, 1.5, argnums=(0, 1))


def test_user_function_rule_by_name_with_the_dispatch_decorator():
    # A script's function (module __main__), declared by name before it exists, as an
    # exported rules module does, and made a dispatch point by the decorator.
    calls = []

    def tiny_rule(x):
        calls.append(1)
        return np.sum(x ** 3), lambda g: (3 * g * x ** 2,)

    register("__main__:tiny", ("f64[1d]",), tiny_rule)
    script = {"__name__": "__main__", "np": np, "dispatch": dispatch}
    exec("@dispatch\ndef tiny(x):\n    return np.sum(x ** 3)\n", script)
    g = adcli.grad(script["tiny"])(np.arange(3.0))
    assert calls == [1]
    np.testing.assert_allclose(g, 3 * np.arange(3.0) ** 2)


def test_without_a_rule_a_dispatch_point_is_transparent():
    x = rng.standard_normal(4)
    check_grad(usermodel.model, x, 0.5, argnums=(0, 1))


def test_rule_with_several_outputs():
    def slogdet_rule(a):
        out = np.linalg.slogdet(a)
        inv = np.linalg.inv(a)
        return out, lambda g: (g[1] * inv.T,)  # g: one cotangent per output (sign's is zero)

    register(np.linalg.slogdet, ("f64[2d]",), slogdet_rule)
    try:
        a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
        check_grad(lambda a: np.linalg.slogdet(a).logabsdet * 2.0, a)
        check_grad(lambda a: np.linalg.slogdet(a)[1] + np.linalg.slogdet(a)[1] ** 2, a)
    finally:
        unregister(np.linalg.slogdet)


def test_keyword_signature_matches_only_calls_with_that_keyword():
    calls = []

    def sum_axis(x, axis):
        calls.append(axis)
        return np.sum(x, axis=axis), lambda g: (np.broadcast_to(np.expand_dims(g, axis), x.shape).copy(),)

    register(np.sum, ("f64[2d]", "axis=int"), sum_axis)
    check_grad(lambda x: np.sum(np.sum(x, axis=1) ** 2), A)
    assert calls and set(calls) == {1}
    n = len(calls)
    adcli.grad(lambda x: np.sum(x ** 2))(A)  # no axis keyword: the native rule serves it
    assert len(calls) == n


def test_traced_keyword_argument_is_refused():
    register("tests.support.usermodel:energy", ("f64[1d]", "s=float"), lambda x, s: (0.0, lambda g: (None,)))
    with pytest.raises(RuleError, match="keyword argument s= is traced"):
        adcli.grad(lambda s: usermodel.energy(np.ones(2), s=s))(1.0)


def test_thunk_cotangents_are_computed_only_for_traced_arguments():
    # kron's rule with each cotangent a thunk: the engine calls the traced argument's only
    called = []

    def thunked(a, b):
        ans, pb = kron_fwd(a, b)

        def pullback(g):
            def first():
                called.append("a")
                return pb(g)[0]

            def second():
                called.append("b")
                return pb(g)[1]
            return first, second
        return ans, pullback

    register(np.kron, ("f64[2d]", "f64[2d]"), thunked)
    ga = adcli.grad(lambda a: np.sum(np.kron(a, B) ** 2))(A)
    assert called == ["a"]
    unregister(np.kron)
    np.testing.assert_allclose(ga, adcli.grad(lambda a: np.sum(np.kron(a, B) ** 2))(A), rtol=1e-12)
    register(np.kron, ("f64[2d]", "f64[2d]"), thunked)
    called.clear()
    ga2, gb2 = adcli.grad(lambda a, b: np.sum(np.kron(a, b) ** 2), argnums=(0, 1))(A, B)
    assert sorted(called) == ["a", "b"]  # each once
    np.testing.assert_allclose(ga2, ga, rtol=1e-12)
    report = check_rule(np.kron, A, B, repeats=3)  # finite differences through the thunks
    assert "finite differences" in report.checks


def test_a_thunk_is_checked_like_a_cotangent():
    @rule(np.sin, "f64[1d]")
    def bad(x):
        return np.sin(x), lambda g: (lambda: np.cos(x)[:, None] * g,)

    with pytest.raises(RuleError, match=r"numpy\.sin\(f64\[1d\]\).*shape \(3, 3\).*shape \(3,\)"):
        adcli.grad(lambda x: np.sum(np.sin(x)))(np.ones(3))

    @rule(np.sin, "f64[1d]", replace=True)
    def empty(x):
        return np.sin(x), lambda g: (lambda: None,)

    with pytest.raises(RuleError, match="thunk giving None for argument 0"):
        adcli.grad(lambda x: np.sum(np.sin(x)))(np.ones(3))


def test_a_thunk_for_a_dict_argument_gives_the_whole_dict_once():
    calls = []

    def tiny_rule(p, x):
        def pullback(g):
            def dp():
                calls.append("p")
                return {"a": g * x, "b": g * 2.0 * p["b"]}
            return dp, lambda: calls.append("x")
        return p["a"] * x + p["b"] ** 2, pullback

    register("__main__:tiny", ("dict{a: float, b: float}", "float"), tiny_rule)
    script = {"__name__": "__main__", "np": np, "dispatch": dispatch}
    exec("@dispatch\ndef tiny(p, x):\n    return p['a'] * x + p['b'] ** 2\n", script)
    g = adcli.grad(script["tiny"])({"a": 1.5, "b": -0.5}, 3.0)
    assert calls == ["p"]  # once for the two traced leaves; x's thunk never called
    assert g == {"a": 3.0, "b": -1.0}


def _dict_rule(p, x):
    def pullback(g):
        return {"b": g * 2.0 * p["b"], "a": g * x}, None  # the keys in another order than the argument's
    return p["a"] * x + p["b"] ** 2, pullback


def test_a_dict_cotangent_is_matched_by_key_not_position():
    register("__main__:keyed", ("dict{a: float, b: float}", "float"), _dict_rule)
    script = {"__name__": "__main__", "np": np, "dispatch": dispatch}
    exec("@dispatch\ndef keyed(p, x):\n    return p['a'] * x + p['b'] ** 2\n", script)
    g = adcli.grad(script["keyed"])({"a": 1.5, "b": -0.5}, 3.0)
    assert g == {"a": 3.0, "b": -1.0}


def test_a_dict_cotangent_with_other_keys_is_refused_by_name():
    def wrong_keys(p, x):
        return p["a"] * x + p["c"] ** 2, lambda g: ({"a": g * x, "b": g * 2.0 * p["c"]}, None)

    register("__main__:keyed2", ("dict{a: float, c: float}", "float"), wrong_keys)
    script = {"__name__": "__main__", "np": np, "dispatch": dispatch}
    exec("@dispatch\ndef keyed2(p, x):\n    return p['a'] * x + p['c'] ** 2\n", script)
    with pytest.raises(RuleError, match="the argument's keys"):
        adcli.grad(script["keyed2"])({"a": 1.5, "c": -0.5}, 3.0)
