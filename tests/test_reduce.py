"""Reductions and scans: np.sum / prod / max / min / mean / cumsum / cumprod, ufunc.reduce and
ufunc.accumulate, the ndarray methods, zeros in products, ties in max/min, float32."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer
from adcli.testing import check_grad


def weights(shape, seed=11):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def wsum(y):
    """Weighted sum with distinct weights: a gradient routed to the wrong place cannot pass."""
    if np.ndim(y) == 0:
        return y * 1.7
    return np.sum(y * weights(np.shape(y)).astype(np.result_type(y)))


def distinct(shape, seed=0, lo=0.5, hi=1.5):
    """Values without ties (so max/min are differentiable) and away from zero (for prod)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    v = lo + (hi - lo) * (rng.permutation(n) + rng.uniform(0.1, 0.9, n)) / n
    return (v * rng.choice([-1.0, 1.0], n)).reshape(shape)


REDUCTIONS = {
    "np.sum": lambda x, **kw: np.sum(x, **kw),
    "np.prod": lambda x, **kw: np.prod(x, **kw),
    "np.max": lambda x, **kw: np.max(x, **kw),
    "np.min": lambda x, **kw: np.min(x, **kw),
    "np.amax": lambda x, **kw: np.amax(x, **kw),
    "np.amin": lambda x, **kw: np.amin(x, **kw),
    "np.mean": lambda x, **kw: np.mean(x, **kw),
    "add.reduce": lambda x, **kw: np.add.reduce(x, **kw),
    "multiply.reduce": lambda x, **kw: np.multiply.reduce(x, **kw),
    "maximum.reduce": lambda x, **kw: np.maximum.reduce(x, **kw),
    "minimum.reduce": lambda x, **kw: np.minimum.reduce(x, **kw),
    ".sum()": lambda x, **kw: x.sum(**kw),
    ".prod()": lambda x, **kw: x.prod(**kw),
    ".max()": lambda x, **kw: x.max(**kw),
    ".min()": lambda x, **kw: x.min(**kw),
    ".mean()": lambda x, **kw: x.mean(**kw),
}
# ufunc.reduce's default axis is 0, not None
UFUNC_REDUCE = {"add.reduce", "multiply.reduce", "maximum.reduce", "minimum.reduce"}

AXES = [
    ((3, 4, 5), "default"),
    ((3, 4, 5), None),
    ((3, 4, 5), 0),
    ((3, 4, 5), 1),
    ((3, 4, 5), -1),
    ((3, 4, 5), -2),
    ((3, 4, 5), (0, 2)),
    ((3, 4, 5), (-1, 0)),
    ((3, 4, 5), (0, 1, 2)),
    ((6,), "default"),
    ((6,), 0),
    ((6,), -1),
    ((), "default"),
]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis", AXES, ids=[f"{s}-axis{a}" for s, a in AXES])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_matches_finite_differences(name, shape, axis, keepdims):
    red = REDUCTIONS[name]
    x = distinct(shape, seed=len(name) + len(shape))
    kw = {} if axis == "default" else {"axis": axis}
    if keepdims:
        kw["keepdims"] = True
    try:
        plain = red(x, **kw)
    except (ValueError, IndexError, np.exceptions.AxisError) as e:  # e.g. np.add.reduce of a 0-d array
        with pytest.raises(type(e)):
            adcli.grad(lambda x: wsum(red(x, **kw)))(x)
        return
    seen = {}

    def f(x):
        y = red(x, **kw)
        if isinstance(x, Tracer):
            seen["value"] = y.value if isinstance(y, Tracer) else y
        return wsum(y)

    g = check_grad(f, x)
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(seen["value"], plain, rtol=1e-15)
    assert np.shape(seen["value"]) == np.shape(plain)


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_float32(name):
    red = REDUCTIONS[name]
    x = distinct((4, 5), seed=3).astype(np.float32)
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
        seen = {}

        def f(x):
            y = red(x, **kw)
            if isinstance(x, Tracer):
                seen["dtype"] = np.result_type(y.value)
            return wsum(y)

        g = check_grad(f, x)
        assert g.dtype == np.float32
        assert seen["dtype"] == np.float32


# --- exact gradients by hand --------------------------------------------------------------


def test_sum_axis_gradient_is_the_broadcast_cotangent():
    x = np.arange(6.0).reshape(2, 3)
    w = np.array([1.0, 10.0, 100.0])
    g = adcli.grad(lambda x: np.sum(np.sum(x, axis=0) * w))(x)
    np.testing.assert_array_equal(g, [[1.0, 10.0, 100.0], [1.0, 10.0, 100.0]])
    g = adcli.grad(lambda x: np.sum(x.sum(axis=1, keepdims=True) * np.array([[2.0], [3.0]])))(x)
    np.testing.assert_array_equal(g, [[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]])


def test_mean_gradient_by_hand():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(adcli.grad(lambda x: np.mean(x))(x), np.full((3, 4), 1 / 12))
    np.testing.assert_array_equal(adcli.grad(lambda x: np.sum(np.mean(x, axis=(0,))))(x), np.full((3, 4), 1 / 3))
    g = adcli.grad(lambda x: np.sum(x.mean(axis=-1) * np.array([1.0, 2.0, 3.0])))(x)
    np.testing.assert_array_equal(g, np.repeat([[0.25], [0.5], [0.75]], 4, axis=1))


@pytest.mark.parametrize("red", [np.prod, np.multiply.reduce, lambda x: x.prod()], ids=["np.prod", "reduce", "method"])
def test_prod_without_zeros(red):
    x = np.array([2.0, -3.0, 0.5, 4.0])
    g = adcli.grad(lambda x: red(x))(x)
    np.testing.assert_allclose(g, np.prod(x) / x, rtol=1e-15)


@pytest.mark.parametrize("red", [np.prod, np.multiply.reduce, lambda x: x.prod()], ids=["np.prod", "reduce", "method"])
def test_prod_with_one_zero(red):
    x = np.array([2.0, 0.0, -3.0, 5.0])
    g = adcli.grad(lambda x: red(x))(x)
    # only the zero's own derivative survives: the product of the others
    np.testing.assert_array_equal(g, [0.0, -30.0, 0.0, 0.0])
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("red", [np.prod, np.multiply.reduce, lambda x: x.prod()], ids=["np.prod", "reduce", "method"])
def test_prod_with_two_zeros(red):
    x = np.array([2.0, 0.0, -3.0, 0.0])
    g = adcli.grad(lambda x: red(x))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.0])
    assert not np.any(np.isnan(g))


def test_prod_with_zeros_along_an_axis():
    x = np.array([[1.0, 0.0, 3.0], [2.0, 4.0, 5.0], [0.0, 0.0, 7.0]])
    g = adcli.grad(lambda x: np.sum(np.prod(x, axis=1) * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, [[0.0, 3.0, 0.0], [200.0, 100.0, 80.0], [0.0, 0.0, 0.0]])
    g = adcli.grad(lambda x: np.sum(np.prod(x, axis=0, keepdims=True)))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 35.0], [0.0, 0.0, 21.0], [2.0, 0.0, 15.0]])
    # and against finite differences (prod is a polynomial: FD are exact up to rounding)
    check_grad(lambda x: wsum(np.prod(x, axis=(0, 1))), x)
    check_grad(lambda x: wsum(np.prod(x, axis=-1)), x)


def test_prod_all_zero_single_element():
    g = adcli.grad(lambda x: np.prod(x))(np.array([0.0]))
    np.testing.assert_array_equal(g, [1.0])


@pytest.mark.parametrize(
    "maxfn", [np.max, np.amax, np.maximum.reduce, lambda x: x.max()], ids=["np.max", "np.amax", "reduce", "method"]
)
def test_max_ties_split_evenly(maxfn):
    x = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    g = adcli.grad(lambda x: maxfn(x))(x)
    np.testing.assert_array_equal(g, [0.0, 1 / 3, 1 / 3, 0.0, 1 / 3])


@pytest.mark.parametrize("minfn", [np.min, np.minimum.reduce, lambda x: x.min()], ids=["np.min", "reduce", "method"])
def test_min_ties_split_evenly(minfn):
    x = np.array([1.0, -3.0, 2.0, -3.0])
    g = adcli.grad(lambda x: 4.0 * minfn(x))(x)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0, 2.0])


def test_max_ties_along_axis_and_keepdims():
    x = np.array([[1.0, 5.0, 5.0], [7.0, 2.0, 7.0], [0.0, 0.0, 0.0]])
    w = np.array([1.0, 2.0, 6.0])
    g = adcli.grad(lambda x: np.sum(np.max(x, axis=1) * w))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [1.0, 0.0, 1.0], [2.0, 2.0, 2.0]])
    g = adcli.grad(lambda x: np.sum(x.max(axis=0, keepdims=True) * w))(x)
    np.testing.assert_array_equal(g, [[0.0, 2.0, 0.0], [1.0, 0.0, 6.0], [0.0, 0.0, 0.0]])
    g = adcli.grad(lambda x: np.max(x, axis=(0, 1)))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0], [0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])


def test_max_ties_float32():
    x = np.array([2.0, 2.0, 1.0, 2.0], dtype=np.float32)
    g = adcli.grad(lambda x: np.max(x))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.array([1 / 3, 1 / 3, 0.0, 1 / 3], np.float32), rtol=1e-7)


def test_max_of_scalar_0d():
    g = adcli.grad(lambda x: np.max(x) * 2.0)(np.array(3.0))
    assert g.shape == () and g == 2.0


# --- scans ----------------------------------------------------------------------------------

SCANS = {
    "np.cumsum": lambda x, **kw: np.cumsum(x, **kw),
    "np.cumprod": lambda x, **kw: np.cumprod(x, **kw),
    "add.accumulate": lambda x, **kw: np.add.accumulate(x, **kw),
    "multiply.accumulate": lambda x, **kw: np.multiply.accumulate(x, **kw),
    ".cumsum()": lambda x, **kw: x.cumsum(**kw),
    ".cumprod()": lambda x, **kw: x.cumprod(**kw),
}
SCAN_AXES = [((3, 4, 2), "default"), ((3, 4, 2), 0), ((3, 4, 2), 1), ((3, 4, 2), -1), ((7,), "default"),
             ((7,), 0), ((7,), -1)]


@pytest.mark.parametrize("shape,axis", SCAN_AXES, ids=[f"{s}-axis{a}" for s, a in SCAN_AXES])
@pytest.mark.parametrize("name", list(SCANS))
def test_scan_matches_finite_differences(name, shape, axis):
    scan = SCANS[name]
    x = distinct(shape, seed=5)
    kw = {} if axis == "default" else {"axis": axis}
    if name.startswith((".cum", "np.cum")) and axis == "default":
        kw = {"axis": None}
    plain = scan(x, **kw)
    seen = {}

    def f(x):
        y = scan(x, **kw)
        if isinstance(x, Tracer):
            seen["value"] = y.value
        return wsum(y)

    check_grad(f, x)
    np.testing.assert_allclose(seen["value"], plain, rtol=1e-15)
    assert seen["value"].shape == plain.shape


@pytest.mark.parametrize("name", [".cumsum()", "np.cumsum", ".cumprod()", "np.cumprod"])
def test_scan_without_axis_flattens(name):
    x = distinct((2, 3), seed=9)
    seen = {}

    def f(x):
        y = SCANS[name](x)
        if isinstance(x, Tracer):
            seen["shape"] = y.shape
        return wsum(y)

    check_grad(f, x)
    assert seen["shape"] == (6,)


def test_cumsum_gradient_by_hand():
    x = np.array([1.0, 2.0, 3.0])
    g = adcli.grad(lambda x: np.sum(np.cumsum(x) * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, [111.0, 110.0, 100.0])


@pytest.mark.parametrize(
    "x,expected",
    [
        # y = [a, ab, abc, abcd]; d(sum y)/dx by hand
        ([2.0, 0.0, 3.0, 4.0], [1.0, 2 + 2 * 3 + 2 * 3 * 4, 0.0, 0.0]),
        ([0.0, 2.0, 3.0, 4.0], [1 + 2 + 6 + 24, 0.0, 0.0, 0.0]),
        ([2.0, 3.0, 4.0, 0.0], [1 + 3 + 12, 2 + 8, 6.0, 24.0]),
        ([0.0, 0.0, 3.0, 4.0], [1.0, 0.0, 0.0, 0.0]),
        ([2.0, 0.0, 0.0, 5.0], [1.0, 2.0, 0.0, 0.0]),
    ],
)
@pytest.mark.parametrize("scan", [np.cumprod, np.multiply.accumulate, lambda x: x.cumprod()],
                         ids=["np.cumprod", "accumulate", "method"])
def test_cumprod_with_zeros_by_hand(scan, x, expected):
    x = np.array(x)
    g = adcli.grad(lambda x: np.sum(scan(x)))(x)
    np.testing.assert_allclose(g, expected, rtol=1e-15)
    check_grad(lambda x: wsum(scan(x)), x)


def test_cumprod_with_zeros_2d_axis():
    x = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 0.0], [0.5, 2.0, 3.0]])
    for axis in (0, 1, -1):
        check_grad(lambda x: wsum(np.cumprod(x, axis=axis)), x)


def test_cumprod_float32_with_zero():
    x = np.array([2.0, 0.0, 3.0], dtype=np.float32)
    g = adcli.grad(lambda x: np.sum(np.cumprod(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.array([1.0, 8.0, 0.0], np.float32))


@pytest.mark.parametrize("name", list(SCANS))
def test_scan_float32(name):
    x = distinct((3, 4), seed=2).astype(np.float32)
    g = check_grad(lambda x: wsum(SCANS[name](x, axis=1)), x)
    assert g.dtype == np.float32


# --- composition -------------------------------------------------------------------------


def test_softmax_style_composition():
    x = distinct((3, 4), seed=4)

    def f(x):
        z = x - np.max(x, axis=1, keepdims=True)
        e = np.exp(z)
        p = e / np.sum(e, axis=1, keepdims=True)
        return wsum(np.log(p)) + np.mean(np.cumsum(p, axis=0))

    check_grad(f, x)


def test_reduction_of_python_float_and_np_scalar():
    assert adcli.grad(lambda a: np.sum(a) * 3.0)(2.0) == 3.0
    g = adcli.grad(lambda a: np.prod(a) ** 2)(np.float64(1.5))
    assert type(g) is np.float64 and g == 3.0


def test_sum_with_dtype_argument():
    x = np.array([1.0, 2.0, 3.0])
    g = adcli.grad(lambda x: np.sum(x, dtype=np.float32) * 2.0)(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])


def test_sum_with_initial():
    x = np.array([1.0, 2.0])
    v, g = adcli.value_and_grad(lambda x: np.sum(x, initial=5.0))(x)
    assert v == 8.0
    np.testing.assert_array_equal(g, [1.0, 1.0])


@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("axis,keepdims", [(-1, False), (2, True), ((0, 2), False), ((0, 1, 2), True)])
def test_a_short_summed_last_axis_spreads_the_cotangent(k, dtype, axis, keepdims):
    # over 4096 elements with a last axis of 2-4 summed and not all the others, the cotangent is
    # spread into a new array (rules/reductions.py:_spread), else a broadcast view (a sum of everything:
    # NumPy's loops take a broadcast number fast): both are the cotangent repeated over the axes
    from adcli.engine.rules.reductions import _spread

    x = np.zeros((60, 80, k), dtype)  # over _SMALL (4096) elements at every k
    g = np.sum(np.arange(x.size).reshape(x.shape).astype(dtype) * (1 + 1j if dtype == np.complex128 else 1),
               axis=axis, keepdims=keepdims)
    got = _spread(g, x, axis, keepdims)
    want = np.broadcast_to(np.expand_dims(g, axis) if not keepdims else g, x.shape)
    assert got.shape == x.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous == (k <= 4 and axis != (0, 1, 2))  # a short last axis alone: a new array
    w = np.linspace(0.5, 1.5, x.size).reshape(x.shape)
    check_grad(lambda v: np.sum(np.sin(np.sum(v * w, axis=axis, keepdims=keepdims)) * 1.3), w.astype(np.float64) * 0.1)
    check_grad(lambda v: np.sum(np.cos(np.mean(v ** 2, axis=axis, keepdims=keepdims))), w.astype(np.float64) * 0.1)
