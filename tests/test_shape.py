"""Shape manipulation, joining and selection: reshape, transpose, concatenate, where, clip, sort,
astype, *_like constructors, ..."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer
from adcli.testing import check_grad


def weights(shape, seed=21):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def wsum(y):
    """A weighted sum with distinct weights per position: a permuted gradient cannot pass."""
    if np.ndim(y) == 0:
        return y * 1.7
    return np.sum(y * weights(np.shape(y)).astype(np.result_type(y)))


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def check_op(op, *args, argnums=0):
    """check_grad of wsum(op(...)) plus: the traced forward value equals NumPy's on plain arrays."""
    plain = op(*args)
    seen = {}

    def f(*a):
        y = op(*a)
        if any(isinstance(v, Tracer) for v in a):
            seen["y"] = y
        return wsum(y)

    g = check_grad(f, *args, argnums=argnums)
    y = seen["y"]
    assert isinstance(y, Tracer), f"result is {type(y).__name__}, not traced"
    np.testing.assert_array_equal(y.value, plain)
    assert np.shape(y.value) == np.shape(plain)
    return g


# --- reshapes and permutations -----------------------------------------------------------

RESHAPES = {
    "reshape-tuple": ((3, 4), lambda x: np.reshape(x, (2, 6))),
    "reshape-minus1": ((3, 4), lambda x: np.reshape(x, (-1, 3))),
    "reshape-int": ((3, 4), lambda x: np.reshape(x, 12)),
    "reshape-order-F": ((3, 4), lambda x: np.reshape(x, (4, 3), order="F")),
    "reshape-3d-F": ((2, 3, 4), lambda x: np.reshape(x, (6, -1), order="F")),
    "method-varargs": ((3, 4), lambda x: x.reshape(6, 2)),
    "method-tuple": ((3, 4), lambda x: x.reshape((2, 2, 3))),
    "method-order-F": ((3, 4), lambda x: x.reshape((2, 6), order="F")),
    "transpose": ((3, 4), lambda x: np.transpose(x)),
    "transpose-axes": ((2, 3, 4), lambda x: np.transpose(x, (1, 2, 0))),
    "transpose-neg-axes": ((2, 3, 4), lambda x: np.transpose(x, (-1, 0, -2))),
    "method-transpose-varargs": ((2, 3, 4), lambda x: x.transpose(2, 0, 1)),
    "method-transpose-tuple": ((2, 3, 4), lambda x: x.transpose((0, 2, 1))),
    ".T": ((3, 4), lambda x: x.T),
    ".T-3d": ((2, 3, 4), lambda x: x.T),
    "swapaxes": ((2, 3, 4), lambda x: np.swapaxes(x, 0, 2)),
    "swapaxes-neg": ((2, 3, 4), lambda x: np.swapaxes(x, -1, 1)),
    "method-swapaxes": ((2, 3, 4), lambda x: x.swapaxes(0, 1)),
    "moveaxis": ((2, 3, 4), lambda x: np.moveaxis(x, 0, -1)),
    "moveaxis-multi": ((2, 3, 4, 5), lambda x: np.moveaxis(x, [0, 1], [-1, 1])),
    "moveaxis-multi2": ((2, 3, 4, 5), lambda x: np.moveaxis(x, [3, 0], [0, 2])),
    "squeeze": ((1, 3, 1, 4), lambda x: np.squeeze(x)),
    "squeeze-axis": ((1, 3, 1, 4), lambda x: np.squeeze(x, axis=2)),
    "squeeze-axis-tuple": ((1, 3, 1, 4), lambda x: np.squeeze(x, axis=(0, -2))),
    "method-squeeze": ((3, 1), lambda x: x.squeeze()),
    "expand_dims": ((3, 4), lambda x: np.expand_dims(x, 1)),
    "expand_dims-neg": ((3, 4), lambda x: np.expand_dims(x, -1)),
    "expand_dims-tuple": ((3, 4), lambda x: np.expand_dims(x, (0, 3))),
    "ravel": ((3, 4), lambda x: np.ravel(x)),
    "ravel-F": ((3, 4), lambda x: np.ravel(x, order="F")),
    "method-ravel": ((2, 3, 2), lambda x: x.ravel()),
    "flatten": ((3, 4), lambda x: x.flatten()),
    "flatten-F": ((3, 4), lambda x: x.flatten(order="F")),
    "broadcast_to-row": ((4,), lambda x: np.broadcast_to(x, (3, 4))),
    "broadcast_to-col": ((3, 1), lambda x: np.broadcast_to(x, (2, 3, 5))),
    "broadcast_to-0d": ((), lambda x: np.broadcast_to(x, (2, 3))),
    "atleast_1d-0d": ((), lambda x: np.atleast_1d(x)),
    "atleast_1d-1d": ((3,), lambda x: np.atleast_1d(x)),
    "atleast_2d-0d": ((), lambda x: np.atleast_2d(x)),
    "atleast_2d-1d": ((3,), lambda x: np.atleast_2d(x)),
    "atleast_2d-2d": ((3, 2), lambda x: np.atleast_2d(x)),
    "copy": ((3, 4), lambda x: np.copy(x)),
    "method-copy": ((3, 4), lambda x: x.copy()),
    "transpose-then-reshape": ((3, 4), lambda x: x.T.reshape(-1)),
    "reshape-then-transpose": ((12,), lambda x: x.reshape(3, 4).T[1:, ::2]),
}


@pytest.mark.parametrize("name", list(RESHAPES))
def test_reshape_like(name):
    shape, op = RESHAPES[name]
    check_op(op, rand(shape, seed=len(name)))


@pytest.mark.parametrize("name", ["reshape-tuple", "transpose-axes", "moveaxis", "ravel-F", "broadcast_to-row", "copy"])
def test_reshape_like_float32(name):
    shape, op = RESHAPES[name]
    g = check_op(op, rand(shape, seed=3).astype(np.float32))
    assert g.dtype == np.float32


def test_broadcast_to_gradient_by_hand():
    g = adcli.grad(lambda x: np.sum(np.broadcast_to(x, (3, 2)) * np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])))(
        np.array([1.0, 1.0])
    )
    np.testing.assert_array_equal(g, [9.0, 12.0])


def test_atleast_multiple_arguments():
    def f(a, b):
        a1, b1 = np.atleast_1d(a, b)
        a2, b2 = np.atleast_2d(a, b)
        return wsum(a1) + wsum(b1) * 2.0 + wsum(a2) * 3.0 + wsum(b2) * 4.0

    check_grad(f, np.array(1.5), rand((3,)), argnums=(0, 1))


def test_reshape_order_F_gradient_by_hand():
    x = np.arange(6.0).reshape(2, 3)
    # F-order ravel visits x[0,0], x[1,0], x[0,1], x[1,1], x[0,2], x[1,2]
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    g = adcli.grad(lambda x: np.sum(np.reshape(x, (6,), order="F") * w))(x)
    np.testing.assert_array_equal(g, [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])


# --- joining --------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concatenate_axis(axis):
    a, b, c = rand((2, 3), 1), rand((2, 3), 2), rand((2, 3), 3)
    check_op(lambda a, b, c: np.concatenate([a, b, c], axis=axis), a, b, c, argnums=(0, 1, 2))


def test_concatenate_different_lengths_along_axis():
    a, b = rand((2, 3), 1), rand((2, 5), 2)
    check_op(lambda a, b: np.concatenate((a, b), axis=1), a, b, argnums=(0, 1))


def test_concatenate_axis_none():
    a, b = rand((2, 3), 1), rand((4,), 2)
    check_op(lambda a, b: np.concatenate([a, b], axis=None), a, b, argnums=(0, 1))


@pytest.mark.parametrize("which", [0, 1])
def test_concatenate_mixed_traced_and_plain(which):
    a, b = rand((3,), 1), rand((2,), 2)
    plain = np.array([10.0, 20.0])
    g = check_op(lambda a, b: np.concatenate([plain, a, b, plain]), a, b, argnums=which)
    assert g.shape == (a, b)[which].shape


def test_concatenate_gradient_by_hand():
    w = np.arange(1.0, 8.0)
    plain = np.array([0.0, 0.0])
    ga, gb = adcli.grad(lambda a, b: np.sum(np.concatenate([a, plain, b]) * w), argnums=(0, 1))(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(ga, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(gb, [6.0, 7.0])


def test_concatenate_same_tracer_twice():
    x = np.array([1.0, 2.0])
    g = adcli.grad(lambda x: np.sum(np.concatenate([x, x * 3.0]) * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g, [1.0 + 9.0, 2.0 + 12.0])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack(axis):
    a, b = rand((2, 3), 1), rand((2, 3), 2)
    check_op(lambda a, b: np.stack([a, b, a * b], axis=axis), a, b, argnums=(0, 1))


def test_stack_same_tracer_twice_dtypes_and_numpys_errors():
    x = np.array([1.0, 2.0])
    g = adcli.grad(lambda x: np.sum(np.stack([x, x * 3.0, x], axis=1) * np.arange(6.0).reshape(2, 3)))(x)
    np.testing.assert_array_equal(g, [0.0 + 3.0 + 2.0, 3.0 + 12.0 + 5.0])
    x32 = x.astype(np.float32)
    ans, g = adcli.value_and_grad(lambda x: np.sum(np.stack([x, np.ones(2)]) ** 2))(x32)
    assert g.dtype == np.float32 and np.result_type(ans) == np.float64  # float32 stacked with float64
    traced_dtype = []
    adcli.grad(lambda x: traced_dtype.append(np.stack([x, x], dtype=np.float64).dtype) or np.sum(x))(x32)
    assert traced_dtype == [np.dtype(np.float64)]
    with pytest.raises(ValueError, match="same shape"):
        adcli.grad(lambda x: np.sum(np.stack([x, np.ones(3)])))(x)


def test_stack_of_scalars_and_plain():
    def f(x):
        return wsum(np.stack([x[0], np.float64(2.0), x[2] * x[1]]))

    check_grad(f, rand((3,), 5))


# --- where ----------------------------------------------------------------------------------


def test_where_gradient_by_hand():
    x = np.array([1.0, -2.0, 3.0])
    y = np.array([10.0, 20.0, 30.0])
    gx, gy = adcli.grad(lambda x, y: np.sum(np.where(x > 0, x * 2.0, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [2.0, 0.0, 2.0])
    np.testing.assert_array_equal(gy, [0.0, 1.0, 0.0])


def test_where_broadcasts_x_and_y():
    mask = np.array([[True, False, True, False], [False, False, True, True], [True, True, True, False]])
    x = rand((4,), 1)
    check_op(lambda x, y: np.where(mask, x, y), x, 0.5, argnums=(0, 1))
    check_op(lambda x, y: np.where(mask, x, y), x, rand((3, 1), 2), argnums=(0, 1))
    gy = adcli.grad(lambda y: np.sum(np.where(mask, 1.0, y)))(0.5)
    assert type(gy) is float and gy == float(np.sum(~mask))


def test_where_traced_condition_is_not_differentiated():
    c = np.array([0.0, 1.5, -2.0])
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([4.0, 5.0, 6.0])
    v, g = adcli.value_and_grad(lambda c: np.sum(np.where(c, a, b)))(c)
    assert v == 4.0 + 2.0 + 3.0
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    gc, ga = adcli.grad(lambda c, a: np.sum(np.where(c, a * c, b)), argnums=(0, 1))(c, a)
    # where(c, a*c, b): only the a*c branch carries gradient, through the product (not the condition)
    np.testing.assert_array_equal(gc, [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(ga, [0.0, 1.5, -2.0])


def test_where_with_one_argument_returns_plain_indices():
    def f(x):
        idx = np.where(x > 0)
        assert not any(isinstance(i, Tracer) for i in idx)
        nz = np.where(x)
        np.testing.assert_array_equal(nz[0], [0, 2])
        return np.sum(x[idx])

    np.testing.assert_array_equal(adcli.grad(f)(np.array([1.0, 0.0, 2.0])), [1.0, 0.0, 1.0])


# --- clip -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lo,hi", [(-0.5, 0.5), (None, 0.3), (-0.3, None), (np.array([-1.0, 0.0, -0.2, 0.1, -2.0]), 0.8)]
)
def test_clip_plain_bounds(lo, hi):
    x = np.array([-1.3, -0.1, 0.25, 0.9, 1.7])
    check_op(lambda x: np.clip(x, lo, hi), x)
    g = adcli.grad(lambda x: np.sum(np.clip(x, lo, hi)))(x)
    inside = np.ones(5, bool)
    if lo is not None:
        inside &= x >= lo
    if hi is not None:
        inside &= x <= hi
    np.testing.assert_array_equal(g, inside.astype(float))


def test_clip_keyword_bounds_and_method():
    x = np.array([-1.3, -0.1, 0.25, 0.9])
    np.testing.assert_array_equal(adcli.grad(lambda x: np.sum(np.clip(x, min=-0.5, max=0.5)))(x), [0, 1, 1, 0])
    np.testing.assert_array_equal(adcli.grad(lambda x: np.sum(x.clip(-0.5, 0.5)))(x), [0, 1, 1, 0])


def test_clip_traced_bounds():
    x = np.array([-1.3, -0.1, 0.25, 0.9, 1.7])
    lo = np.array([-0.5, -0.5, 0.5, -0.5, -0.5])
    hi = 0.8
    check_op(lambda x, lo, hi: np.clip(x, lo, hi), x, lo, hi, argnums=(0, 1, 2))
    gx, glo, ghi = adcli.grad(lambda x, lo, hi: np.sum(np.clip(x, lo, hi)), argnums=(0, 1, 2))(x, lo, hi)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(glo, [1.0, 0.0, 1.0, 0.0, 0.0])
    assert type(ghi) is float and ghi == 2.0


def test_clip_traced_upper_bound_only():
    x = np.array([0.1, 0.9, 2.0])
    ghi = adcli.grad(lambda hi: np.sum(np.clip(x, None, hi)))(np.array([0.5, 0.5, 0.5]))
    np.testing.assert_array_equal(ghi, [0.0, 1.0, 1.0])


# --- sort -------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 0, 1, None])
def test_sort(axis):
    x = rand((3, 4), 7)
    check_op(lambda x: np.sort(x, axis=axis), x)


def test_sort_default_axis_and_kind():
    x = rand((2, 5), 8)
    check_op(lambda x: np.sort(x), x)
    check_op(lambda x: np.sort(x, kind="stable"), x)


def test_sort_gradient_by_hand():
    x = np.array([3.0, 1.0, 2.0])
    g = adcli.grad(lambda x: np.sum(np.sort(x) * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, [100.0, 1.0, 10.0])


def test_sort_with_ties():
    x = np.array([2.0, 1.0, 2.0, 0.0])
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    g = adcli.grad(lambda x: np.sum(np.sort(x) * w))(x)
    # sorted: [0 (x3), 1 (x1), 2, 2 (x0 and x2 in some order)]
    assert g[3] == 1.0 and g[1] == 10.0
    assert sorted([g[0], g[2]]) == [100.0, 1000.0]
    # a function that does not care about the order of ties has its exact gradient
    np.testing.assert_array_equal(adcli.grad(lambda x: np.sum(np.sort(x) ** 2))(x), 2 * x)


def test_sort_method_is_refused():
    def f(x):
        y = x * 1.0
        y.sort()
        return np.sum(y)

    with pytest.raises(adcli.errors.UnsupportedError, match="sort"):
        adcli.grad(f)(np.array([2.0, 1.0]))


# --- astype ---------------------------------------------------------------------------------


def test_astype_float64_to_float32_and_back():
    x = np.array([0.1, 1.7, -2.3])
    seen = {}

    def f(x):
        y = x.astype(np.float32)
        seen["dtype"] = y.dtype
        return np.sum(y.astype(np.float64) ** 2)

    g = adcli.grad(f)(x)
    assert seen["dtype"] == np.float32
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x.astype(np.float32).astype(np.float64), rtol=1e-15)


def test_astype_float32_to_float64():
    x = np.array([0.1, 1.7, -2.3], dtype=np.float32)
    g = check_grad(lambda x: wsum(x.astype(np.float64) ** 3), x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 3 * x.astype(np.float64) ** 2 * weights((3,)), rtol=1e-6)


@pytest.mark.parametrize("dt", [int, np.int32, bool, "int64"])
def test_astype_int_gives_a_plain_array(dt):
    x = np.array([0.5, 1.7, -2.3])
    seen = {}

    def f(x):
        k = x.astype(dt)
        seen["k"] = k
        return np.sum(x * k)

    g = adcli.grad(f)(x)
    k = seen["k"]
    assert type(k) is np.ndarray and k.dtype == np.dtype(dt)
    np.testing.assert_array_equal(k, x.astype(dt))
    np.testing.assert_array_equal(g, x.astype(dt).astype(float))


def test_astype_on_traced_scalar():
    v, g = adcli.value_and_grad(lambda x: x[0].astype(np.float32) * 2.0)(np.array([1.5, 2.0]))
    assert v == 3.0
    np.testing.assert_array_equal(g, [2.0, 0.0])


# --- *_like constructors ----------------------------------------------------------------------


@pytest.mark.parametrize("maker", [np.zeros_like, np.empty_like, np.ones_like, lambda x: np.full_like(x, 7.0)],
                         ids=["zeros_like", "empty_like", "ones_like", "full_like"])
def test_like_then_assignment(maker):
    x = rand((4,), 3)

    def f(x):
        y = maker(x)
        y[0] = x[1] * 2.0
        y[1:3] = np.sin(x[2:4])
        y[3] = 0.5
        return wsum(y)

    g = check_grad(f, x)
    w = weights((4,))
    np.testing.assert_allclose(g, [0.0, 2.0 * w[0], w[1] * np.cos(x[2]), w[2] * np.cos(x[3])], rtol=1e-14)


@pytest.mark.parametrize("maker", [np.zeros_like, np.ones_like], ids=["zeros_like", "ones_like"])
def test_like_is_constant(maker):
    x = rand((2, 3), 1)
    v, g = adcli.value_and_grad(lambda x: np.sum(maker(x) * 2.0) + np.sum(x))(x)
    assert v == pytest.approx(np.sum(maker(x) * 2.0) + np.sum(x))
    np.testing.assert_array_equal(g, np.ones((2, 3)))


def test_like_with_float32_and_int_dtype():
    x = rand((3,), 1).astype(np.float32)

    def f(x):
        y = np.zeros_like(x)
        assert y.dtype == np.float32
        k = np.zeros_like(x, dtype=int)
        assert type(k) is np.ndarray and k.dtype.kind == "i"
        y[1] = x[0] * 3.0
        return np.sum(y)

    g = adcli.grad(f)(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.array([3.0, 0.0, 0.0], np.float32))
