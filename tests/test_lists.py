"""np.array / np.asarray of (nested) lists holding traced values (engine/lists.py): NumPy's shape,
dtype and errors, finite-difference gradients, and the patch undone after every gradient."""

import threading

import numpy as np
import pytest

import adcli
from adcli.engine import lists
from adcli.engine.core import Tracer
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


def test_asarray_and_array_of_a_traced_value_keep_it_traced_with_numpys_aliasing_and_layout():
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3) / 5.0)
    seen = {}

    def f(v):
        a = np.asarray(v)
        b = np.array(v)  # a copy, in v's layout (order="K")
        c = np.ascontiguousarray(v)
        if isinstance(v, Tracer):  # (check_grad also runs f on plain values)
            seen.update(same=a is v and np.asfortranarray(v) is v and np.asanyarray(v) is v,
                        copy_is_f=b.value.flags.f_contiguous and not b.value.flags.c_contiguous,
                        c_is_c=c.value.flags.c_contiguous, f32=np.asarray(v, dtype=np.float32).value.dtype,
                        ndmin=np.array(v, ndmin=3).value.shape)
        b[0, 0] = 7.0  # writes into the copy only
        return np.sum(a * c * np.sin(v)) + np.sum(b * b) + np.sum(np.asarray(v, dtype=np.float64))

    check_grad(f, x)
    g = adcli.grad(f)(x)
    assert seen == {"same": True, "copy_is_f": True, "c_is_c": True, "f32": np.float32, "ndmin": (1, 2, 3)}
    expected = 2 * x * np.sin(x) + x * x * np.cos(x) + 2 * x + 1.0  # d/dx of x x sin(x) + x^2 + x
    expected[0, 0] -= 2 * x[0, 0]  # b[0, 0] was overwritten
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        adcli.grad(lambda v: np.sum(np.array(v, copy=False, order="C")))(x)


@pytest.mark.parametrize("build", [
    lambda v: np.r_[v, 1.0, v[:2] * 2],
    lambda v: np.r_[0:2, v, np.sum(v)],
    lambda v: np.c_[v, v ** 2],
    lambda v: np.c_[np.reshape(v, (3, 1)), v],
    lambda v: np.r_["0,2", v, v * 3],
    lambda v: np.r_["-1", v, 2.0],
    lambda v: np.r_[np.outer(v, v), np.ones((1, 3))],
], ids=["r_mixed", "r_slice", "c_columns", "c_2d", "r_directive", "r_axis", "r_2d"])
def test_r_and_c_of_traced_values(build):
    x = np.array([0.3, 1.2, -0.5])
    ref = build(x)
    w = np.arange(ref.size, dtype=float).reshape(ref.shape)
    seen = {}

    def f(v):
        out = build(v)
        if isinstance(v, Tracer):
            seen["out"] = out.value
        return np.sum(out * w)

    check_grad(f, x)
    adcli.grad(f)(x)
    assert seen["out"].dtype == ref.dtype and seen["out"].strides == ref.strides and np.array_equal(seen["out"], ref)


def test_r_keeps_numpys_dtype_for_float32_and_refuses_matrix_directives():
    x = np.array([0.3, 1.2], dtype=np.float32)
    seen = {}

    def f(v):
        seen["dtype"] = np.r_[v, 1.0].value.dtype
        return np.sum(np.r_[v, 1.0])

    adcli.grad(f)(x)
    assert seen["dtype"] == np.r_[x, 1.0].dtype == np.float32
    with pytest.raises(adcli.AdcliError, match="matrix directives"):
        adcli.grad(lambda v: np.sum(np.r_["r", v, v]))(x)
