"""The native rules the advisor advised (origin="advised", engine/rules/): numpy.roll, triu, tril, outer
and var, on several shapes, dtypes and parameters, each checked by check_rule (central finite
differences, output type/shape/dtype, inputs unchanged, accumulation) and against the verified
derivation that served them before; calls outside their cover fall back on that derivation."""

import numpy as np
import pytest

import adcli
from adcli.engine.registry import REGISTRY
from adcli.errors import NoRuleError
from adcli.rules.listing import list_rules
from adcli.testing import check_rule

rng = np.random.default_rng(11)
A3 = rng.standard_normal((2, 3, 4))
M = rng.standard_normal((5, 4))
F = np.asfortranarray(rng.standard_normal((4, 6)))

CASES = [
    (np.roll, (M, 2), {"axis": 0}), (np.roll, (M, -1), {"axis": 1}), (np.roll, (M, 7), {}),
    (np.roll, (A3, (1, -2)), {"axis": (0, 2)}), (np.roll, (F, 3), {"axis": 1}),
    (np.roll, (M.astype(np.float32), 1), {"axis": 1}), (np.roll, (M, np.int64(2)), {"axis": 0}),
    (np.triu, (M,), {}), (np.triu, (M, 2), {}), (np.triu, (A3, -1), {}), (np.triu, (F,), {}),
    (np.tril, (M,), {}), (np.tril, (A3, 1), {}), (np.tril, (M.astype(np.float32), 0), {}),
    (np.outer, (M[:, 0], M[0]), {}), (np.outer, (A3, M[0]), {}),
    (np.outer, (M[0].astype(np.float32), M[1].astype(np.float32)), {}),
    (np.var, (M,), {}), (np.var, (M,), {"axis": 0}), (np.var, (A3,), {"axis": (0, 2), "keepdims": True}),
    (np.var, (M,), {"axis": 1, "ddof": 1}), (np.var, (F,), {"axis": -1}), (np.var, (A3.astype(np.float32),), {"axis": 1}),
]


@pytest.mark.parametrize("func,args,kwargs", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(CASES)])
def test_native_rule_matches_finite_differences_and_the_derivation(func, args, kwargs):
    report = check_rule(func, *args, kwargs=kwargs, timing=False)
    assert report.rule == "native rule" and "finite differences" in report.checks
    # the derivation that served these calls before agrees (native rule taken out for a moment)
    w = rng.standard_normal(np.shape(func(*args, **kwargs)))

    def loss(x):
        return np.sum(w * func(x, *args[1:], **kwargs))

    native = adcli.grad(loss)(args[0])
    e = REGISTRY[func]
    saved, e.native = e.native, None
    try:
        derived = adcli.grad(loss)(args[0])
    finally:
        e.native = saved
    assert native.dtype == derived.dtype == args[0].dtype and native.shape == args[0].shape
    np.testing.assert_allclose(native, derived, rtol=1e-5 if args[0].dtype == np.float32 else 1e-12, atol=1e-6)


def test_values_and_layout_are_numpys():
    for func, args, kwargs in CASES:
        out = adcli.value_and_grad(lambda x: func(x, *args[1:], **kwargs).sum())(args[0])[0]
        np.testing.assert_array_equal(out, func(*args, **kwargs).sum())
    seen = {}

    def keep(x):
        seen["roll"] = np.roll(x, 1, axis=1)
        seen["triu"] = np.triu(x)
        return np.sum(seen["roll"]) + np.sum(seen["triu"])

    adcli.grad(keep)(F)
    for name, ref in (("roll", np.roll(F, 1, axis=1)), ("triu", np.triu(F))):
        v = seen[name].value
        assert v.flags.c_contiguous == ref.flags.c_contiguous and v.flags.f_contiguous == ref.flags.f_contiguous


@pytest.mark.parametrize("func,args,kwargs", [
    (np.triu, (rng.standard_normal(4),), {}),  # 1-d input broadcasts to 2-d
    (np.var, (M,), {"dtype": np.float64}),
    (np.outer, (M[0], M[1]), {"out": None}),
])
def test_calls_outside_the_native_cover_fall_back_on_the_derivation(func, args, kwargs):
    def loss(x):
        return np.sum(func(x, *args[1:], **kwargs))

    got = adcli.grad(loss)(args[0])
    eps = 1e-6
    x = args[0]
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        fd[i] = (np.sum(func(x + d, *args[1:], **kwargs)) - np.sum(func(x - d, *args[1:], **kwargs))) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-5)


def test_var_with_where_is_refused_as_before():
    # where= has neither a native rule nor a verified derivation: a clear error, not a guess
    with pytest.raises(NoRuleError, match="only without where="):
        adcli.grad(lambda x: np.var(x, where=M > 0))(M)


JOINS = [
    (np.hstack, (M, M[:, :2])), (np.hstack, (M[0], M[1, :3], M[2])), (np.hstack, (A3, A3[:, :1])),
    (np.hstack, (M.astype(np.float32), M[:, :1].astype(np.float32))), (np.hstack, (F, M[:4])),
    (np.vstack, (M, M[:2])), (np.vstack, (A3, A3[:1])), (np.vstack, (F, F[:1])),
    (np.vstack, (M.astype(np.float32), M[:1].astype(np.float32))),
    # outside the native cover: 1-d arrays stacked as rows, a 0-d element: the derivation
    (np.vstack, (M[0], M[1])), (np.hstack, (M[0], np.float64(2.0))),
]


@pytest.mark.parametrize("func,arrays", JOINS, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(JOINS)])
def test_hstack_and_vstack_match_finite_differences_and_the_derivation_for_every_array(func, arrays):
    report = check_rule(func, arrays, timing=False)
    assert "finite differences" in report.checks
    w = rng.standard_normal(np.shape(func(arrays)))

    def loss(*xs):
        return np.sum(w * func(xs))

    nums = tuple(range(len(arrays)))
    native = adcli.grad(loss, nums)(*arrays)
    e = REGISTRY[func]
    saved, e.native = e.native, None
    try:
        derived = adcli.grad(loss, nums)(*arrays)
    finally:
        e.native = saved
    for a, n, d in zip(arrays, native, derived):
        assert np.shape(n) == np.shape(a) and np.result_type(n) == np.result_type(a)
        np.testing.assert_allclose(n, d, rtol=1e-5 if np.result_type(a) == np.float32 else 1e-12, atol=1e-6)


def test_a_join_of_traced_and_plain_arrays_is_one_node_with_numpys_value():
    from tests.support.recorder import recording

    plain = M[:, :2].copy()
    value, tapes = recording(lambda: adcli.value_and_grad(lambda x: np.sum(np.hstack((x, plain)) ** 2))(M))
    assert value[0] == pytest.approx(np.sum(np.hstack((M, plain)) ** 2))
    np.testing.assert_allclose(value[1], 2 * M)
    kinds = [n[0].__name__ for n in tapes[-1].nodes if n is not None]
    assert kinds.count("_pb_concat") == 1 and not any("reshape" in k or "getitem" in k for k in kinds), kinds


def test_origin_marks_the_advised_rules_and_only_them():
    """Where a rule came from is a field of its registry entry, not a file: exactly the advisor's
    library-tier verdicts (docs/advisor.md § Engine defaults) are marked ``advised``."""
    advised = {e.func for e in REGISTRY.values() if e.origin == "advised"}
    assert advised == {np.roll, np.var, np.std, np.outer, np.triu, np.tril, np.hstack, np.vstack}
    assert all(REGISTRY[f].native is not None for f in advised)


def test_rules_list_says_which_native_rules_were_advised():
    """``adcli rules list`` shows the origin field: the advised rules, and no other, say so."""
    rows = {r["name"]: r for r in list_rules("native") if r["source"] == "native"}
    advised = {name for name, r in rows.items() if r["note"].startswith("advised")}
    assert advised == {"numpy.roll", "numpy.var", "numpy.std", "numpy.outer", "numpy.triu", "numpy.tril", "numpy.hstack",
                       "numpy.vstack"}
