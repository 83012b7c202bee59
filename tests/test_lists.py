"""np.array / np.asarray of (nested) lists holding traced values (engine/lists.py): NumPy's shape,
dtype and errors, finite-difference gradients, and the patch undone after every gradient."""

import threading

import numpy as np
import pytest

import adcli
from adcli.engine import lists
from adcli.testing import check_grad

X = np.array([0.7, -1.3, 2.1])


@pytest.mark.parametrize("build", [
    lambda x: np.array([x[0] * 2.0, x[1]]),
    lambda x: np.array([[x[0], 1.0], [2.0, x[1]]]),
    lambda x: np.asarray([np.sin(x), x ** 2]),
    lambda x: np.array((x[2], 3, x[0] * x[1])),
    lambda x: np.array([x, x[::-1]], ndmin=3),
    lambda x: np.array([[x[0]], [x[1]]], dtype=np.float32),
], ids=["scalars", "nested-with-constants", "asarray-of-arrays", "tuple-with-int", "ndmin", "dtype"])
def test_values_dtype_shape_and_gradient(build):
    seen = {}

    def f(x):
        out = build(x)
        seen["out"] = out
        return np.sum(out * np.cos(np.arange(out.size)).reshape(out.shape))

    value = adcli.value_and_grad(f)(X)[0]
    ref = build(X)  # NumPy's own answer on plain values
    np.testing.assert_allclose(value, f(X), rtol=1e-6 if ref.dtype == np.float32 else 1e-15)
    assert seen["out"].shape == ref.shape and seen["out"].dtype == ref.dtype
    check_grad(f, X, rtol=1e-3 if ref.dtype == np.float32 else 1e-6)


def test_a_ragged_list_raises_numpys_error():
    with pytest.raises(ValueError, match="inhomogeneous"):
        adcli.grad(lambda x: np.sum(np.array([x, x[:2]])))(X)


def test_the_patch_is_undone_after_each_gradient_even_one_that_raises():
    assert np.array is lists._real_array and np.asarray is lists._real_asarray
    adcli.grad(lambda x: np.sum(np.array([x[0], x[1]])))(X)
    assert np.array is lists._real_array and np.asarray is lists._real_asarray
    with pytest.raises(ZeroDivisionError):
        adcli.grad(lambda x: 1 / 0)(X)
    assert np.array is lists._real_array and np.asarray is lists._real_asarray


def test_plain_calls_meanwhile_get_numpys_answers():
    def f(x):
        plain = np.array([[1, 2], [3, 4]], dtype=np.int8, order="F")  # inside the gradient: NumPy's array
        assert plain.dtype == np.int8 and plain.flags.f_contiguous
        assert np.asarray(plain) is plain
        return np.sum(np.array([x[0], x[1]]) * plain[0])

    np.testing.assert_allclose(adcli.grad(f)(X), [1.0, 2.0, 0.0])


def test_threads_share_the_patch():
    errors = []

    def work():
        try:
            for _ in range(50):
                g = adcli.grad(lambda x: np.sum(np.array([x[0] ** 2, x[1]])))(X)
                np.testing.assert_allclose(g, [2 * X[0], 1.0, 0.0])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and np.array is lists._real_array
