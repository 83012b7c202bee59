"""Indexing (x[idx]), assignment (y[idx] = v) and in-place operators (y += v) on traced arrays,
and the cases the engine must refuse."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer
from adcli.errors import AdcliError, TracingError, UnsupportedError
from adcli.testing import check_grad

THIS_FILE = "test_indexing.py"


def weights(shape, seed=31):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def wsum(y):
    if np.ndim(y) == 0:
        return y * 1.7
    return np.sum(y * weights(np.shape(y)))


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# --- reading ---------------------------------------------------------------------------------

X1 = (7,)
X2 = (4, 5)
X3 = (3, 4, 5)
READS = {
    "int": (X1, 3),
    "negative-int": (X1, -2),
    "np-integer": (X1, np.int64(4)),
    "slice": (X1, slice(1, 5)),
    "slice-step": (X1, slice(0, None, 2)),
    "slice-negative-step": (X1, slice(None, None, -1)),
    "slice-negative-step-bounds": (X1, slice(5, 0, -2)),
    "slice-empty": (X1, slice(3, 3)),
    "2d-int-int": (X2, (1, 2)),
    "2d-negative": (X2, (-1, -3)),
    "2d-row": (X2, 2),
    "2d-col": (X2, (slice(None), 3)),
    "2d-slices-steps": (X2, (slice(None, None, -2), slice(1, None, 3))),
    "None": (X2, (None, 1)),
    "None-slice": (X2, (slice(None), None, slice(1, 3))),
    "Ellipsis": (X3, (Ellipsis, 2)),
    "Ellipsis-middle": (X3, (1, Ellipsis, slice(None, 2))),
    "Ellipsis-None": (X3, (Ellipsis, None)),
    "int-array": (X1, np.array([0, 3, 6])),
    "int-list": (X1, [1, 2]),
    "int-array-repeated": (X1, np.array([2, 2, 0, 2])),
    "negative-int-array": (X1, np.array([-1, 0, -1])),
    "2d-int-array": (X1, np.array([[0, 1], [1, 6]])),
    "bool-mask": (X1, np.array([True, False, True, True, False, False, True])),
    "bool-mask-2d": (X2, np.arange(20).reshape(4, 5) % 3 == 0),
    "bool-mask-rows": (X2, np.array([True, False, True, True])),
    "mixed-int-array-slice": (X2, (np.array([0, 2, 2]), slice(1, 4))),
    "mixed-slice-int-array": (X2, (slice(None), [4, 0, 4])),
    "mixed-int-int-array": (X2, (3, np.array([1, 1, 2]))),
    "two-int-arrays": (X2, (np.array([0, 1, 3]), np.array([4, 4, 0]))),
    "3d-mixed": (X3, (np.array([0, 2]), slice(None), np.array([1, 3]))),
    "3d-mask-and-slice": (X3, (np.array([True, False, True]), slice(1, 3))),
}


@pytest.mark.parametrize("name", list(READS))
def test_read(name):
    shape, idx = READS[name]
    x = rand(shape, seed=len(name))
    seen = {}

    def f(x):
        y = x[idx]
        if isinstance(x, Tracer):
            seen["y"] = y
        return wsum(y) + 0.1 * np.sum(x)  # the extra term keeps the output traced for empty reads

    check_grad(f, x)
    np.testing.assert_array_equal(seen["y"].value, x[idx])
    assert np.shape(seen["y"].value) == np.shape(x[idx])


def test_read_repeated_indices_accumulate_exact_counts():
    x = np.arange(5.0)
    g = adcli.grad(lambda x: np.sum(x[np.array([0, 2, 2, 4, 2, 0])]))(x)
    np.testing.assert_array_equal(g, [2.0, 0.0, 3.0, 0.0, 1.0])
    g = adcli.grad(lambda x: np.sum(x[[1, 1, 1]] * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, [0.0, 111.0, 0.0, 0.0, 0.0])


def test_read_repeated_pairs_2d():
    x = np.zeros((3, 3))
    g = adcli.grad(lambda x: np.sum(x[np.array([0, 0, 2]), np.array([1, 1, 2])]))(x)
    np.testing.assert_array_equal(g, [[0, 2, 0], [0, 0, 0], [0, 0, 1]])


def test_read_repeated_rows_broadcast():
    x = np.zeros((3, 2))
    g = adcli.grad(lambda x: np.sum(x[[2, 0, 2], :] * np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])))(x)
    np.testing.assert_array_equal(g, [[3.0, 4.0], [0.0, 0.0], [6.0, 8.0]])


@pytest.mark.parametrize("shape, idx", [
    ((6, 40), [5, 0, 5, -1, 2, 0, 0]),  # -1 and 5 are one row
    ((50, 64), np.random.default_rng(3).integers(-50, 50, 300)),
    ((4, 8, 5), np.array([3, 3, 1, -4], dtype=np.int32)),  # rows of 40 elements, a 32-bit index
    ((5, 33), np.array([4, 4, 4], dtype=np.uint8)),
    ((3, 32), np.array([1] * 17 + [0, 2, 1])),  # a row picked 18 times: np.add.at itself
    ((3, 32), np.array([], dtype=np.int64)),
    ((3, 32), np.array([2])),
])
def test_read_repeated_wide_rows_sum_each_row_once(shape, idx):
    # rows of 32 elements or more take the path by occurrence (mutation._add_rows), not
    # np.add.at, with np.add.at's sums to the bit (each row's shares added in its order)
    x = rand(shape)
    w = weights(np.shape(x[idx])) * 1e3 ** np.arange(np.shape(x[idx])[0]).reshape((-1,) + (1,) * (x.ndim - 1)) % 7.3
    g = adcli.grad(lambda x: np.sum(x[idx] * w))(x)
    expected = np.zeros(shape)
    np.add.at(expected, np.asarray(idx), w)
    np.testing.assert_array_equal(g, expected)
    check_grad(lambda x: wsum(x[idx]), x)


def test_read_same_element_many_times_in_a_loop():
    x = np.array([1.0, 2.0, 3.0])

    def f(x):
        s = 0.0
        for _ in range(10):
            for i in range(3):
                s = s + x[i] * x[i]
        return s

    np.testing.assert_allclose(adcli.grad(f)(x), 20.0 * x)


def test_read_with_mask_from_traced_comparison():
    x = np.array([1.0, -2.0, 3.0, -4.0])
    g = adcli.grad(lambda x: np.sum(x[x > 0] ** 2))(x)
    np.testing.assert_array_equal(g, [2.0, 0.0, 6.0, 0.0])


def test_iteration_and_len():
    x = rand((3, 2), 1)

    def f(x):
        assert len(x) == 3
        return sum(wsum(row) * (i + 1) for i, row in enumerate(x))

    check_grad(f, x)


def test_read_float32():
    x = rand((4, 3), 2).astype(np.float32)
    g = check_grad(lambda x: wsum(x[[0, 0, 3], 1:]) + x[2, 2], x)
    assert g.dtype == np.float32


def test_read_0d_array_with_empty_tuple_and_ellipsis():
    g = adcli.grad(lambda x: x[()] * 3.0 + x[...] * 2.0 + np.sum(x[None, ..., None]))(np.array(1.5))
    assert g.shape == () and g == 6.0


def test_0d_traced_array_written_into_a_plain_array_is_an_adcli_error():
    # NumPy takes a traced 0-d array (it has __getitem__) for a sequence and replaces any error
    # raised while storing it with "setting an array element with a sequence"; adcli lets the
    # store happen and raises its own error when the function returns.
    def write(x):
        plain = np.zeros(2) + 0.0  # computed, not a constructor's own
        seen = [plain]  # noqa: F841  (held elsewhere too: NumPy would change what the list holds)
        plain[0] = x.reshape(())
        return np.sum(plain) + np.sum(x)

    with pytest.raises(TracingError, match="writing a traced value into a plain array") as info:
        adcli.grad(write)(np.array([1.5]))
    assert THIS_FILE in str(info.value) and "plain[0] = x.reshape(())" in str(info.value)


# --- assignment ------------------------------------------------------------------------------

TARGETS = {
    "zeros_like": lambda x: np.zeros_like(x),
    "empty_like": lambda x: np.empty_like(x),
    "copy": lambda x: x.copy(),
    "np.copy": lambda x: np.copy(x),
    "op-result": lambda x: x * 2.0,
    "op-result-exp": lambda x: np.exp(x),
}


@pytest.mark.parametrize("target", list(TARGETS))
def test_scalar_assignment(target):
    x = rand((5,), 1)
    make = TARGETS[target]

    def f(x):
        y = make(x)
        y[1] = np.sin(x[0])
        y[-1] = 2.5
        y[3] = x[3] * x[2]
        return wsum(y)

    check_grad(f, x)


@pytest.mark.parametrize("target", list(TARGETS))
def test_slice_assignment(target):
    x = rand((6,), 2)
    make = TARGETS[target]

    def f(x):
        y = make(x)
        y[1:4] = x[3:] ** 2
        y[::-5] = np.array([1.0, 2.0])
        return wsum(y)

    check_grad(f, x)


@pytest.mark.parametrize("target", list(TARGETS))
def test_advanced_index_assignment(target):
    x = rand((3, 4), 3)
    make = TARGETS[target]

    def f(x):
        y = make(x)
        y[[0, 2], [1, 3]] = x[1, :2] * 3.0
        y[np.array([False, True, False])] = np.cos(x[0])
        return wsum(y)

    check_grad(f, x)


def test_mask_assignment():
    x = rand((5,), 4)

    def f(x):
        y = x.copy()
        y[x > 0] = 0.0  # relu-like, reversed
        return wsum(y)

    g = check_grad(f, x)
    np.testing.assert_allclose(g, np.where(x > 0, 0.0, weights((5,))), rtol=1e-14)


def test_assignment_gradient_by_hand():
    x = np.array([1.0, 2.0, 3.0])
    w = np.array([1.0, 10.0, 100.0])

    def f(x):
        y = np.zeros_like(x)
        y[2] = x[0] * 5.0
        y[0:2] = x[1:3]
        return np.sum(y * w)

    # y = [x1, x2, 5 x0]
    np.testing.assert_array_equal(adcli.grad(f)(x), [500.0, 1.0, 10.0])


def test_broadcasting_assignment_row_into_block():
    row = rand((4,), 5)
    x = rand((3, 4), 6)

    def f(row, x):
        y = x * 1.0
        y[0:2] = row  # the row is written into two rows
        y[2, 1:3] = row[0]  # a scalar into a slice
        return wsum(y)

    g_row, g_x = check_grad(f, row, x, argnums=(0, 1))
    w = weights((3, 4))
    expected_row = w[0] + w[1]
    expected_row[0] += w[2, 1] + w[2, 2]
    np.testing.assert_allclose(g_row, expected_row, rtol=1e-14)
    expected_x = w.copy()
    expected_x[0:2] = 0.0
    expected_x[2, 1:3] = 0.0
    np.testing.assert_allclose(g_x, expected_x, rtol=1e-14)


def test_broadcasting_assignment_column_and_keepdims_shapes():
    x = rand((3, 4), 7)

    def f(x):
        y = np.zeros_like(x)
        y[:, 1:3] = np.sum(x, axis=1, keepdims=True)  # (3, 1) into (3, 2)
        y[:, 0] = x[:, 3:4].reshape(1, 3)  # (1, 3) into (3,)
        return wsum(y)

    check_grad(f, x)


def test_overwrite_twice_first_write_gets_zero_gradient():
    def f(a, b):
        y = np.zeros_like(b)
        y[0] = a[0] * 2.0
        y[0] = b[0] * 3.0
        y[1:3] = a[1:3]
        y[1:3] = b[1:3] * 4.0
        return np.sum(y)

    a = np.array([1.0, 2.0, 3.0])
    b = np.array([4.0, 5.0, 6.0])
    ga, gb = adcli.grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gb, [3.0, 4.0, 4.0])


def test_overwrite_partially():
    def f(x):
        y = np.zeros_like(x)
        y[0:3] = x[0:3] * 2.0
        y[1] = 7.0
        return np.sum(y)

    np.testing.assert_array_equal(adcli.grad(f)(np.ones(4)), [2.0, 0.0, 2.0, 0.0])


def test_naive_map_pattern():
    def naive_map(x):
        y = np.empty_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                y[i, j] = np.sin(np.cos(np.exp(x[i, j])))
        return np.sum(y)

    x = rand((4, 3), 8) * 0.5
    g = check_grad(naive_map, x)
    e = np.exp(x)
    np.testing.assert_allclose(g, np.cos(np.cos(e)) * -np.sin(e) * e, rtol=1e-13)


def test_loop_accumulating_into_array():
    def f(x):
        y = np.zeros_like(x)
        for i in range(1, len(x)):
            y[i] = y[i - 1] + x[i] * x[i - 1]  # reads back what was written
        return y[-1]

    x = np.array([1.0, 2.0, 3.0, 4.0])
    g = check_grad(f, x)
    # y[-1] = x1 x0 + x2 x1 + x3 x2
    np.testing.assert_array_equal(g, [2.0, 1.0 + 3.0, 2.0 + 4.0, 3.0])


def test_read_back_after_write():
    def f(x):
        y = x * 1.0
        y[0] = np.sin(x[1])
        z = y[0] * 2.0 + y[1]
        return z

    x = np.array([0.3, 0.7])
    g = check_grad(f, x)
    np.testing.assert_allclose(g, [0.0, 2.0 * np.cos(0.7) + 1.0], rtol=1e-15)


def test_read_slice_before_write_keeps_old_values():
    # a copy (not a view) taken before the write keeps the old values, as in NumPy
    def f(x):
        y = x * 1.0
        old = y[[0, 1]]  # advanced index: a copy
        y[0] = 10.0 * x[1]
        return np.sum(old * np.array([1.0, 2.0])) + np.sum(y)

    x = np.array([1.0, 2.0, 3.0])
    v, g = adcli.value_and_grad(f)(x)
    assert v == pytest.approx(1.0 + 4.0 + 20.0 + 2.0 + 3.0)
    np.testing.assert_array_equal(g, [1.0, 2.0 + 10.0 + 1.0, 1.0])


def test_saved_values_not_corrupted_by_later_write():
    def f(x):
        y = x.copy()
        z = y * y
        y[0] = 5.0
        return np.sum(z) + np.sum(y)

    x = np.array([1.5, -2.0, 3.0])
    v, g = adcli.value_and_grad(f)(x)
    assert v == pytest.approx(np.sum(x * x) + 5.0 + x[1] + x[2])
    np.testing.assert_allclose(g, 2 * x + np.array([0.0, 1.0, 1.0]), rtol=1e-15)
    check_grad(f, x)


def test_saved_values_not_corrupted_by_later_write_into_zeros_like():
    def f(x):
        y = np.zeros_like(x)
        y[0] = x[0]
        s = np.sin(y)  # saves y's value for its pullback (cos(y))
        y[0] = 100.0
        y[1] = x[1] * 2.0
        return np.sum(s) + np.sum(y)

    x = np.array([0.4, 0.9])
    g = check_grad(f, x)
    np.testing.assert_allclose(g, [np.cos(0.4), 2.0], rtol=1e-15)


def test_saved_values_not_corrupted_by_inplace_operator():
    def f(x):
        y = x * 1.0
        z = np.exp(y)
        y *= 3.0
        y += z
        return np.sum(y * z)

    check_grad(f, np.array([0.2, -0.5, 1.0]))


def test_assignment_of_float32_value_into_float64_array_and_back():
    x = np.array([1.0, 2.0])
    xs = np.array([3.0], dtype=np.float32)

    def f(x, xs):
        y = np.zeros_like(x)
        y[0] = xs[0] * 2.0
        y[1] = x[0]
        return np.sum(y * np.array([1.0, 5.0]))

    gx, gxs = adcli.grad(f, argnums=(0, 1))(x, xs)
    assert gxs.dtype == np.float32 and gx.dtype == np.float64
    np.testing.assert_array_equal(gx, [5.0, 0.0])
    np.testing.assert_array_equal(gxs, np.array([2.0], np.float32))


# --- in-place operators --------------------------------------------------------------------


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**="])
def test_inplace_operator_on_array_updates_the_object(op):
    x = np.array([0.5, 1.5, 2.0])
    v = np.array([1.2, 0.7, 1.1])
    seen = {}

    def f(x, v):
        y = x * 1.0
        alias = y
        if op == "+=":
            y += v
        elif op == "-=":
            y -= v
        elif op == "*=":
            y *= v
        elif op == "/=":
            y /= v
        else:
            y **= v
        if isinstance(x, Tracer):
            seen["same"] = y is alias
            seen["alias_value"] = np.array(alias.value)
        return wsum(alias)

    check_grad(f, x, v, argnums=(0, 1))
    assert seen["same"]
    expected = {"+=": x + v, "-=": x - v, "*=": x * v, "/=": x / v, "**=": x**v}[op]
    np.testing.assert_allclose(seen["alias_value"], expected, rtol=1e-15)


def test_inplace_operator_with_broadcast_and_plain_operand():
    def f(x, r):
        y = np.zeros_like(x)
        y += x
        y *= r  # (4,) broadcast over (3, 4)
        y -= 1.0
        y /= np.array([[1.0], [2.0], [4.0]])
        return wsum(y)

    check_grad(f, rand((3, 4), 1), rand((4,), 2), argnums=(0, 1))


def test_inplace_operator_in_a_loop():
    def f(x):
        acc = np.zeros_like(x)
        for k in range(1, 4):
            acc += x**k
        return np.sum(acc)

    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(adcli.grad(f)(x), 1 + 2 * x + 3 * x**2, rtol=1e-15)


def test_inplace_operator_float32_target_keeps_dtype():
    x = np.array([1.0, 2.0], dtype=np.float32)

    def f(x):
        y = x * np.float32(1.0)
        y += np.array([0.5, 0.5])  # float64 operand: NumPy keeps y float32 (same_kind cast)
        assert y.dtype == np.float32
        return np.sum(y * y)

    g = adcli.grad(f)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * (x + 0.5), rtol=1e-6)


def test_inplace_operator_on_scalar_rebinds():
    seen = {}

    def f(x):
        s = x[0]
        t = s
        s += x[1]
        s *= 2.0
        s **= 2.0
        seen["t"] = t.value
        seen["s"] = s.value
        return s + t

    x = np.array([1.0, 2.0])
    g = adcli.grad(f)(x)
    # s = (2 (x0 + x1))**2, t = x0: ds/dx0 = ds/dx1 = 8 (x0 + x1) = 24
    np.testing.assert_array_equal(g, [25.0, 24.0])
    assert seen["t"] == 1.0 and seen["s"] == 36.0


def test_inplace_operator_on_python_float_argument():
    def f(a):
        a += 1.0
        a *= a
        return a

    assert adcli.grad(f)(2.0) == 6.0


def test_inplace_operator_on_element_of_array():
    def f(x):
        y = x * 1.0
        y[1] += x[0] * 3.0  # y.__setitem__(1, y[1] + ...)
        y[0] *= 2.0
        return np.sum(y * np.array([1.0, 10.0]))

    np.testing.assert_array_equal(adcli.grad(f)(np.array([1.0, 2.0])), [2.0 + 30.0, 10.0])


# --- refused ---------------------------------------------------------------------------------


def _refused(f, x, exc, *words):
    with pytest.raises(exc) as info:
        adcli.grad(f)(x)
    msg = str(info.value)
    assert THIS_FILE in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def test_refuse_assignment_into_input():
    def f(x):
        x[0] = 1.0
        return np.sum(x)

    x = np.array([3.0, 4.0])
    _refused(f, x, UnsupportedError, "input")
    np.testing.assert_array_equal(x, [3.0, 4.0])


def test_refuse_inplace_operator_on_input():
    def f(x):
        x += 1.0
        return np.sum(x)

    x = np.array([3.0, 4.0])
    _refused(f, x, UnsupportedError, "input")
    np.testing.assert_array_equal(x, [3.0, 4.0])


def test_refuse_assignment_into_input_inside_pytree():
    def f(d):
        d["w"][0] = 1.0
        return np.sum(d["w"])

    w = np.array([3.0, 4.0])
    with pytest.raises(UnsupportedError, match="input"):
        adcli.grad(f)({"w": w})
    np.testing.assert_array_equal(w, [3.0, 4.0])


def _numpy_semantics(f, x):
    """Writes through and into views follow NumPy: adcli's value is NumPy's, and the gradient
    passes finite differences."""
    v, _ = adcli.value_and_grad(f)(x.copy())
    np.testing.assert_allclose(v, f(x.copy()), rtol=1e-13)
    check_grad(f, x)


def test_assignment_through_a_chained_view():
    def f(x):
        y = x * 1.0
        y[0][1] = x[0, 0] * 3.0
        return np.sum(y * weights(y.shape))

    _numpy_semantics(f, rand((2, 3)))


@pytest.mark.parametrize("view", ["y.T", "y.reshape(-1)", "y[1:]", "y[:, 0]"])
def test_assignment_into_a_view_changes_the_array(view):
    def f(x):
        y = x * 1.0
        v = eval(view)
        v[0] = 5.0 * x[2, 2]
        return np.sum(y * weights(y.shape)) + np.sum(v * weights(v.shape, 3))

    _numpy_semantics(f, rand((3, 3)))


def test_inplace_operator_on_a_view_changes_the_array():
    def f(x):
        y = x * 1.0
        row = y[0]
        row += x[1] * 2.0  # NumPy changes y
        return np.sum(y * weights(y.shape))

    _numpy_semantics(f, rand((2, 2)))


def test_assignment_overlapping_live_view_slice_region():
    def f(x):
        y = x * 1.0
        row = y[0]
        y[0, 0:2] = 7.0 * x[1, 2]
        return np.sum(row * weights(row.shape))  # NumPy: the row sees the write

    _numpy_semantics(f, rand((2, 3)))


def test_assignment_overlapping_live_view_single_element():
    def f(x):
        y = x * 1.0
        row = y[0]
        y[0, 1] = 7.0
        return np.sum(row)

    x = np.ones((2, 3))
    v, g = adcli.value_and_grad(f)(x)
    assert v == 9.0
    np.testing.assert_array_equal(g, [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])


def test_assignment_overlapping_live_view_after_a_non_overlapping_one():
    def f(x):
        y = x * 1.0
        row = y[0]
        y[1, 0:3] = 5.0  # does not touch row
        y[0, 0:3] = 7.0 * x[1, 1]  # does
        return np.sum(row * weights(row.shape))

    _numpy_semantics(f, rand((2, 3)))


def test_inplace_operator_with_live_view():
    def f(x):
        y = x * 1.0
        col = y[:, 0]
        y += x * x
        return np.sum(col * weights(col.shape))

    _numpy_semantics(f, rand((2, 2)))


def test_assignment_not_overlapping_a_live_view_is_allowed():
    def f(x):
        y = x * 1.0
        row = y[0]
        y[1, 1] = 7.0 * x[0, 0]
        return np.sum(row) + np.sum(y)

    v, g = adcli.value_and_grad(f)(np.ones((2, 2)))
    assert v == 2.0 + (1.0 + 1.0 + 1.0 + 7.0)
    np.testing.assert_array_equal(g, [[2.0 + 7.0, 2.0], [1.0, 0.0]])


def test_view_that_is_dead_does_not_block_assignment():
    def f(x):
        y = x * 1.0
        s = np.sum(y[0])  # the view y[0] is gone after this line
        y[0, 0] = 3.0
        return s + np.sum(y)

    v, g = adcli.value_and_grad(f)(np.ones((2, 2)))
    assert v == 2.0 + 3.0 + 1.0 + 1.0 + 1.0
    np.testing.assert_array_equal(g, [[1.0, 2.0], [1.0, 1.0]])


@pytest.mark.parametrize("idx", [[0, 0], np.array([1, 2, 1]), (np.array([0, 0]), np.array([1, 1]))])
def test_refuse_assignment_with_repeated_indices(idx):
    def f(x):
        y = np.zeros_like(x)
        y[idx] = x[0, 0] * 2.0
        return np.sum(y)

    _refused(f, np.ones((3, 3)), UnsupportedError, "repeated")


def test_assignment_with_unique_integer_array_is_allowed():
    def f(x):
        y = np.zeros_like(x)
        y[[2, 0]] = x[:2] * np.array([1.0, 10.0])
        return np.sum(y * np.array([1.0, 2.0, 3.0]))

    # y[2] = x0, y[0] = 10 x1
    np.testing.assert_array_equal(adcli.grad(f)(np.ones(3)), [3.0, 10.0, 0.0])


@pytest.mark.parametrize("where", ["read", "write", "tuple", "slice"])
def test_refuse_indexing_with_traced_value(where):
    def f(x):
        i = x[0]
        if where == "read":
            return x[i]
        if where == "tuple":
            return x[1, i] if x.ndim > 1 else x[(i,)]
        if where == "slice":
            return np.sum(x[:i])
        y = x * 1.0
        y[i] = 0.0
        return np.sum(y)

    with pytest.raises((TracingError, UnsupportedError)) as info:
        adcli.grad(f)(np.array([1.0, 2.0, 3.0]))
    assert THIS_FILE in str(info.value)
    assert "index" in str(info.value)


def test_assigning_a_list_of_tracers_converts_it_as_numpy_does():
    def f(x):
        y = np.zeros_like(x)
        y[0:2] = [x[1], x[0] * 3.0]
        return np.sum(y * np.array([1.0, 2.0]))

    np.testing.assert_allclose(check_grad(f, np.array([1.0, 2.0])), [6.0, 1.0])

    def ragged(x):
        y = np.zeros((2, 2)) + x[0]
        y[0:2] = [[x[1]], [x[0], 1.0]]
        return np.sum(y)

    with pytest.raises(AdcliError) as info:
        adcli.grad(ragged)(np.array([1.0, 2.0]))
    assert THIS_FILE in str(info.value)


def test_assignment_into_scalar_tracer_is_a_type_error():
    def f(x):
        s = x[0]
        s[0] = 1.0
        return s

    with pytest.raises(TypeError):
        adcli.grad(f)(np.array([1.0]))


def test_user_arrays_untouched_after_assignments():
    x = np.array([1.0, 2.0, 3.0])
    keep = x.copy()

    def f(x):
        y = x.copy()
        y[0] = 100.0
        y *= 2.0
        z = x * 1.0
        z[1:] = 0.0
        return np.sum(y) + np.sum(z)

    adcli.grad(f)(x)
    np.testing.assert_array_equal(x, keep)


def test_self_overlapping_assignment_shift():
    # y[1:] = y[:-1]: the view is only the source of the assignment (NumPy buffers the overlap);
    # nothing reads it afterwards, so this is an ordinary shift: y = [x0, x0, x1, x2].
    def f(x):
        y = x * 1.0
        y[1:] = y[:-1]
        return np.sum(y * np.array([1.0, 10.0, 100.0, 1000.0]))

    x = np.array([1.0, 2.0, 3.0, 4.0])
    v, g = adcli.value_and_grad(f)(x)
    assert v == 1.0 + 10.0 + 200.0 + 3000.0
    np.testing.assert_array_equal(g, [11.0, 100.0, 1000.0, 0.0])


def test_self_assignment_reversed():
    def f(x):
        y = x * 1.0
        y[::-1] = y
        return np.sum(y * np.array([1.0, 10.0, 100.0, 1000.0]))

    x = np.array([1.0, 2.0, 3.0, 4.0])
    v, g = adcli.value_and_grad(f)(x)
    assert v == 4.0 + 30.0 + 200.0 + 1000.0
    np.testing.assert_array_equal(g, [1000.0, 100.0, 10.0, 1.0])
