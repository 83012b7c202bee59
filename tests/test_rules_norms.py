"""Norms of traced values have NumPy's values bit for bit: np.linalg.norm takes a BLAS dot
product for the 2-norm of a whole array, vector_norm a pairwise sum, and a reversed axis pair
sums in another order; the rule's forward is the program's own call (engine/rules/norms.py)."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import make_tracer
from adcli.engine.tape import Tape
from adcli.testing import check_grad

ORDS = [None, 1, 2, -1, np.inf, -np.inf, 3, 0.5, "fro", "nuc"]
AXES = [None, 0, -1, (0, 1), (1, 0)]


def traced_value(fn, x):
    tape = Tape()
    out = fn(make_tracer(x, tape.leaf(), tape))
    return getattr(out, "value", out)


@pytest.mark.parametrize("shape", [(7,), (1000,), (5, 7), (40, 30), (3, 4, 5)], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_values_are_numpys_bit_for_bit(shape, keepdims):
    rng = np.random.default_rng(sum(shape))
    checked = 0
    for ord in ORDS:
        for axis in AXES:
            for _ in range(3):
                x = rng.standard_normal(shape) * rng.uniform(0.1, 100.0)
                try:
                    want = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
                except (ValueError, np.exceptions.AxisError):
                    with pytest.raises((ValueError, np.exceptions.AxisError)):
                        traced_value(lambda t: np.linalg.norm(t, ord=ord, axis=axis, keepdims=keepdims), x)
                    break
                got = traced_value(lambda t: np.linalg.norm(t, ord=ord, axis=axis, keepdims=keepdims), x)
                assert np.shape(got) == np.shape(want) and np.array_equal(got, want), (ord, axis)
                checked += 1
    assert checked >= 30


@pytest.mark.parametrize("fn", [lambda t: np.linalg.vector_norm(t), lambda t: np.linalg.vector_norm(t, axis=(1, 0)),
                                lambda t: np.linalg.vector_norm(t, ord=3, axis=0, keepdims=True),
                                lambda t: np.linalg.matrix_norm(t), lambda t: np.linalg.matrix_norm(t, keepdims=True)])
def test_vector_and_matrix_norm_values_are_numpys(fn):
    x = np.random.default_rng(1).standard_normal((40, 30)) * 7.0
    assert np.array_equal(traced_value(fn, x), fn(x))


@pytest.mark.parametrize("ord, axis", [(None, None), (2, None), ("fro", (1, 0)), (3, 0)])
def test_norm_gradients_match_finite_differences(ord, axis):
    x = np.random.default_rng(2).standard_normal((6, 5) if ord == "fro" or axis is not None else (9,))
    check_grad(lambda v: np.sum(np.linalg.norm(v, ord=ord, axis=axis)), x)
    value, _ = adcli.value_and_grad(lambda v: np.sum(np.linalg.norm(v, ord=ord, axis=axis)))(x)
    assert value == np.sum(np.linalg.norm(x, ord=ord, axis=axis))


@pytest.mark.parametrize("ord", [2, 3.0, 0.5])
@pytest.mark.parametrize("keepdims", [False, True])
def test_a_zero_row_gets_the_subgradient_zero_and_the_others_theirs(ord, keepdims):
    # the pullback divides on the reduced shape and masks only when a norm is zero
    x = np.array([[3.0, -4.0, 1.0], [0.0, 0.0, 0.0], [0.5, 2.0, -1.5]])
    w = np.array([1.5, 2.5, -0.5])
    f = lambda x: np.sum(np.linalg.norm(x, ord=ord, axis=1, keepdims=keepdims).ravel() * w)
    g = adcli.grad(f)(x)
    n = np.sum(np.abs(x) ** ord, axis=1) ** (1 / ord)
    expected = np.zeros_like(x)
    for i in (0, 2):
        expected[i] = w[i] * np.sign(x[i]) * (np.abs(x[i]) / n[i]) ** (ord - 1)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)
    assert np.all(g[1] == 0.0)
    # a whole zero array, and the norm of a whole array with an infinite cotangent's sign
    assert np.array_equal(adcli.grad(lambda x: np.linalg.norm(x) * 2.0)(np.zeros((2, 2))), np.zeros((2, 2)))
