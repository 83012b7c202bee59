"""Summing a cotangent back to a broadcast argument's shape (engine.sums.sum_to_shape): the sum
as a product with ones (engine.sums) when the summed axes are one run with axes after it, NumPy's reduction
otherwise; both give the reference sums, dtypes and shapes."""

import itertools

import numpy as np
import pytest

from adcli.engine import sums
from adcli.engine.sums import sum_to_shape
from adcli.testing import check_grad


def _reference(c, shape):
    lead = c.ndim - len(shape)
    out = c.sum(axis=tuple(range(lead)), dtype=c.dtype) if lead else c
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and out.shape[i] != 1)
    return out.sum(axis=axes, keepdims=True, dtype=c.dtype) if axes else out


def _cases():
    """(cotangent shape, argument shape): every way of broadcasting up to 4 axes of sizes 1-5,
    added axes in front, stretched axes anywhere."""
    for nd in range(1, 5):
        for dims in itertools.product([1, 2, 5], repeat=nd):
            for lead in range(nd + 1):
                for stretched in itertools.product([False, True], repeat=nd - lead):
                    yield dims, tuple(1 if s else d for d, s in zip(dims[lead:], stretched))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_every_broadcast_sums_back_as_numpy_sums(monkeypatch, dtype):
    monkeypatch.setattr(sums, "MATMUL_MIN", 0)  # the product for small arrays too
    rng = np.random.default_rng(0)
    by_product = 0
    for dims, shape in _cases():
        c = rng.standard_normal(dims).astype(dtype)
        if dtype is np.complex128:
            c = c + 1j * rng.standard_normal(dims)
        want = _reference(c, shape)
        by_product += sums.sum_by_product(c, shape, c.ndim - len(shape)) is not None
        got = sum_to_shape(c, shape)
        assert got.shape == shape and got.dtype == c.dtype, (dims, shape)
        tol = 1e-5 if dtype is np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{dims} -> {shape}")
    assert by_product > 100  # the product served a good share of them


def test_a_strided_or_broadcast_cotangent_takes_numpys_reduction():
    c = np.broadcast_to(np.arange(6.0).reshape(1, 1, 6), (40, 30, 6))  # stride 0: never copied
    assert sums.sum_by_product(c, (40, 1, 6), 0) is None
    np.testing.assert_allclose(sum_to_shape(c, (40, 1, 6)), _reference(np.array(c), (40, 1, 6)))
    c = np.ones((40, 30, 12))[:, :, ::2]
    assert sums.sum_by_product(c, (40, 1, 6), 0) is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pairwise_differences_and_a_bias_have_their_gradients(dtype):
    # x[:, None, :] - y[None, :, :] and a bias over a batch: both summed by the product
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((40, 3)).astype(dtype), rng.standard_normal((30, 3)).astype(dtype)
    b, W = rng.standard_normal(4).astype(dtype), rng.standard_normal((3, 4)).astype(dtype)

    def f(x, y, b):
        d = x[:, None, :] - y[None, :, :]
        return np.sum(np.exp(-np.sum(d**2, axis=2))) + np.sum(np.tanh(x @ W + b) ** 2)

    grads = check_grad(f, x, y, b, argnums=(0, 1, 2))
    assert all(g.dtype == dtype for g in grads)
