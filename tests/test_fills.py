"""Arrays the differentiated code makes with NumPy's constructors (engine.fills): traced writes
into them work with NumPy's semantics; until one happens they are the plain array in every use."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy import zeros  # bound before any gradient, as programs do

import adcli
from adcli.errors import TracingError
from adcli.testing import check_grad

X = np.array([0.3, -1.2, 0.8])


def _loop_fill(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = np.sin(x[i]) * x[(i + 1) % 3]
    return np.sum(y * y)


def _rows(x):
    A = np.empty((2, 3))
    A[0] = x * 2.0
    A[1, :] = np.cos(x)
    return np.sum(A @ np.ones(3)) + np.sum(A[1] * x)


def _constructors(x):
    a = np.ones(3)
    a[1] = x[0] * x[1]
    b = np.full((2, 3), 0.5)
    b[:, 2] = x[:2]
    c = np.zeros_like(np.arange(3.0))  # a plain prototype
    c[0] = x[2] ** 2
    d = zeros((3,))  # NumPy's name bound by `from numpy import zeros`
    d[2] = x[1]
    return np.sum(a * x) + np.sum(b ** 2) + np.sum(c) + np.sum(d * x)


def _in_place_and_out(x):
    y = np.zeros(3)
    y += x
    y *= x
    z = np.empty(3)
    np.multiply(x, 3.0, out=z)
    w = np.zeros(3)
    np.copyto(w, np.tanh(x))
    return np.sum(y) + np.sum(z * w)


def _traced_fill(x):
    return np.sum(np.full(3, x[0]) * X) + np.sum(np.full_like(np.zeros((2, 2)), x[1]) ** 2)


@pytest.mark.parametrize("f", [_loop_fill, _rows, _constructors, _in_place_and_out, _traced_fill])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_traced_writes_into_constructed_arrays(f, dtype):
    check_grad(f, X.astype(dtype))


def test_value_matches_numpy():
    value, _ = adcli.value_and_grad(_loop_fill)(X)
    assert value == _loop_fill(X)


def test_an_alias_by_name_is_the_same_array():
    def f(x):
        y = np.zeros(2)
        same = y
        y[0] = x[0]
        return np.sum(same * 3.0)

    np.testing.assert_allclose(adcli.grad(f)(X), [3.0, 0.0, 0.0])


def test_plain_uses_are_the_arrays():
    seen = {}

    def f(x):
        c = np.zeros(4)
        c[1] += 2.0
        seen["float"] = float(c[1]) + math.exp(c[0])
        seen["int"] = int(c[1])
        seen["list"] = c.tolist()
        seen["plus"] = type(c + 1.0)
        seen["rows"] = [type(r) for r in np.zeros((2, 2))]
        seen["shape"] = (c.shape, c.dtype, c.ndim, len(c), c.T.shape)
        seen["ints"] = type(np.zeros(3, dtype=int))
        seen["compiled"] = type(np.random.default_rng(0).uniform(size=3))  # np.empty called from compiled code
        return np.sum(x * c[:3])

    np.testing.assert_allclose(adcli.grad(f)(X), [0.0, 2.0, 0.0])
    assert seen["float"] == 3.0 and seen["int"] == 2 and seen["list"] == [0.0, 2.0, 0.0, 0.0]
    assert seen["plus"] is np.ndarray and seen["rows"] == [np.ndarray, np.ndarray]
    assert seen["shape"] == ((4,), np.float64, 1, 4, (4,))
    assert seen["ints"] is np.ndarray and seen["compiled"] is np.ndarray
    assert type(np.zeros(3)) is np.ndarray  # outside a gradient: NumPy's own


def test_a_view_taken_before_the_first_traced_write_is_refused():
    def f(x):
        y = np.zeros(3)
        head = y[:2]
        y[0] = x[0]
        return np.sum(head)

    with pytest.raises(TracingError, match="view or another reference") as info:
        adcli.grad(f)(X)
    assert "test_fills.py" in str(info.value)


def test_escapes_after_a_traced_write_are_refused():
    def f(x):
        y = np.zeros(3)
        y[0] = x[0]
        return float(y[0]) * x[1]

    with pytest.raises(TracingError, match="test_fills.py"):
        adcli.grad(f)(X)


def test_a_constructed_array_can_be_the_output():
    def f(x):
        y = np.zeros(())
        y[()] = x[0] ** 2
        return y

    assert adcli.grad(f)(X)[0] == pytest.approx(2 * X[0])


def test_a_constructed_array_handed_to_rules_and_scipy():
    import scipy.special as sp

    def f(x):
        y = np.zeros(3)
        y[:] = x * 2.0
        plain = np.ones(3)
        return sp.logsumexp(y) + np.dot(plain, x) + np.sum(np.concatenate([y, plain]))

    check_grad(f, X)
