"""A traced value written into a plain float array the function computed (``v = x1 * 2.0;
v[i] = t`` with x1 left out of argnums) is the same program as with every argument
differentiated (engine.plain_writes): accepted, with the same value and gradients, unless
something else sees the array's buffer, where it is refused as before."""

from __future__ import annotations

import numpy as np
import pytest

import adcli
from adcli.errors import TracingError
from adcli.testing import check_grad

X0 = np.array([1.0, 2.0, 3.0])
X1 = np.array([3.0, 4.0, 5.0])


def _element(x0, x1):
    v = x1 * 2.0
    v[0] = x0[1]
    return np.sum(v * x0)


def _slice(x0, x1):
    v = x1 * 2.0
    v[0:2] = x0[1:]
    return np.sum(v * x0)


def _integer_arrays(x0, x1):
    v = x1 * 2.0
    v[np.array([0, 2])] = x0[1:] ** 2
    return np.sum(v ** 2)


def _mask(x0, x1):
    v = x1 * 2.0
    v[v > 7] = x0[0]
    return np.sum(v ** 2)


def _augmented_view(x0, x1):
    v = np.outer(x1, x1)
    v[0:1, None] += x0[:1]
    return np.sum(v ** 2)


def _augmented_element(x0, x1):
    v = x1 * 2.0
    i = 1
    v[i + 1] *= x0[0] * 3
    return np.sum(v ** 2)


def _scalar(x0, x1):
    v = x1 * 2.0
    v[-1] = np.sum(x0)  # a traced 0-d value: NumPy asks float() of it
    return np.sum(v * x0)


def _loop(x0, x1):
    v = x1 * 2.0
    for i in range(3):
        v[i] = v[i] * x0[i]
    return np.sum(v ** 2)


def _view_of_a_temporary(x0, x1):
    v = (np.outer(x1, x1) * 2.0)[:, ::-1]  # views an array nothing else holds
    v[0] = x0
    return np.sum(v * v)


def _constructor_then_reshape(x0, x1):
    v = np.zeros_like(x1).reshape(-1)  # a view of np.zeros_like's array, which nothing else holds
    v[2] = x0[0]
    return np.sum(v * x1)


def _augmented_fill(x0, x1):
    v = np.full_like(x1, 0.5)
    v[2:0:-1] += x0.max() * np.array([0.5, -0.5])
    return np.sum(v * v * x1)


def _in_a_helper(x0, x1):
    def fill(t, data):
        out = data + 1.0
        out[1:] = t[:2]
        return out
    return np.sum(fill(x0, x1) ** 2)


def _used_before(x0, x1):
    v = x1 * 2.0
    y = v * x0  # a pullback reads v: the old buffer keeps its values
    v[0] = x0[1]
    return np.sum(y) + np.sum(v)


def _two_dimensional_float32(x0, x1):
    v = np.outer(x1, x1).astype(np.float32)
    v[1, :] = x0  # cast to float32 as NumPy stores it
    assert v.dtype == np.float32
    return np.sum(v * v)


PROGRAMS = [_element, _slice, _integer_arrays, _mask, _augmented_view, _augmented_element, _scalar, _loop,
            _view_of_a_temporary, _constructor_then_reshape, _augmented_fill, _in_a_helper, _used_before]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__[1:])
def test_a_write_into_an_array_made_from_plain_arguments_does_not_depend_on_argnums(f):
    both = check_grad(f, X0.copy(), X1.copy(), argnums=(0, 1))  # finite differences
    first = check_grad(f, X0.copy(), X1.copy(), argnums=0)
    second = check_grad(f, X0.copy(), X1.copy(), argnums=1)
    np.testing.assert_allclose(first, both[0], rtol=1e-12)
    np.testing.assert_allclose(second, both[1], rtol=1e-12)
    value, _ = adcli.value_and_grad(f, argnums=0)(X0.copy(), X1.copy())
    assert value == f(X0.copy(), X1.copy())  # NumPy's own value, bit for bit


def test_a_float32_array_takes_the_write_cast_as_numpy_stores_it():
    value, both = adcli.value_and_grad(_two_dimensional_float32, argnums=(0, 1))(X0.copy(), X1.copy())
    value_first, first = adcli.value_and_grad(_two_dimensional_float32, argnums=0)(X0.copy(), X1.copy())
    assert value == value_first == _two_dimensional_float32(X0.copy(), X1.copy())
    np.testing.assert_array_equal(first, both[0])
    np.testing.assert_allclose(first, 2 * X0, rtol=1e-6)  # d/dx0 of the sum of squares of the row it fills


def test_the_callers_arrays_are_untouched():
    x0, x1 = X0.copy(), X1.copy()
    for f in PROGRAMS:
        adcli.grad(f, argnums=0)(x0, x1)
    np.testing.assert_array_equal(x0, X0)
    np.testing.assert_array_equal(x1, X1)


# --- refused: something else would see the old buffer -------------------------------------------

def _second_name(x0, x1):
    v = x1 * 2.0
    w = v
    v[0] = x0[1]
    return np.sum(v * x0) + np.sum(w)


def _earlier_view(x0, x1):
    v = x1 * 2.0
    w = v[1:]
    v[0] = x0[1]
    return np.sum(v * x0) + np.sum(w)


def _viewed_through_its_base(x0, x1):
    base = x1 * 2.0
    v = base[:2]
    v[0] = x0[1]
    return np.sum(v * x0[:2]) + np.sum(base)


def _in_a_list(x0, x1):
    v = x1 * 2.0
    kept = [v]  # noqa: F841
    v[0] = x0[1]
    return np.sum(v * x0)


def _closure_cell(x0, x1):
    v = x1 * 2.0

    def total():
        return np.sum(v)
    v[0] = x0[1]
    return total() * np.sum(x0)


def _attribute(x0, x1):
    class Box:
        pass
    box = Box()
    box.v = x1 * 2.0
    box.v[0] = x0[1]
    return np.sum(box.v * x0)


def _callers_array(x0, x1):
    x1[0] = x0[1]
    return np.sum(x1 * x0)


_GLOBAL = X1 * 2.0


def _global(x0, x1):
    _GLOBAL[0] = x0[1]
    return np.sum(_GLOBAL * x0)


SEEN, NOT_LOCAL, CALLERS = "something else holds the array", "not a local name", "the array is the caller's"
REFUSED = [(_second_name, SEEN), (_earlier_view, SEEN), (_viewed_through_its_base, SEEN), (_in_a_list, SEEN),
           (_closure_cell, NOT_LOCAL), (_attribute, NOT_LOCAL), (_callers_array, CALLERS), (_global, NOT_LOCAL)]


@pytest.mark.parametrize("f, why", REFUSED, ids=[f.__name__[1:] for f, _ in REFUSED])
def test_a_write_another_holder_would_not_see_is_refused_saying_why(f, why):
    x1 = X1.copy()
    kept = _GLOBAL.copy()
    with pytest.raises(TracingError, match="writing a traced value into a plain array") as info:
        adcli.grad(f, argnums=0)(X0.copy(), x1)
    assert why in str(info.value) and "test_plain_writes.py" in str(info.value)
    np.testing.assert_array_equal(x1, X1)  # the refusal left the caller's array as it was
    np.testing.assert_array_equal(_GLOBAL, kept)


def test_an_index_with_a_side_effect_is_evaluated_once_and_refused():
    calls = []

    def where():
        calls.append(1)
        return 0

    def f(x0, x1):
        v = x1 * 2.0
        v[where()] = x0[1]
        return np.sum(v)

    with pytest.raises(TracingError, match="writing a traced value into a plain array.*does not evaluate a second"):
        adcli.grad(f, argnums=0)(X0.copy(), X1.copy())
    assert calls == [1]


def test_a_plain_arrays_dot_method_of_a_traced_value_names_the_traced_spellings():
    # ndarray.dot of a plain array converts its argument itself (no dispatch reaches the engine):
    # an argnums-dependent refusal left (x1 traced works), named with the spellings that work
    with pytest.raises(TracingError, match=r"x1\.dot\(\.\.\.\).*np\.dot\(x1, \.\.\.\) or x1 @"):
        adcli.grad(lambda x0, x1: np.sum(x1.dot(x0)), argnums=0)(X0.copy(), X1.copy())


def test_other_writes_keep_numpys_errors():
    def shape_mismatch(x0, x1):
        v = x1 * 2.0
        v[0:2] = x0  # 3 values into 2 places
        return np.sum(v)

    with pytest.raises(ValueError, match="could not broadcast"):
        shape_mismatch(X0.copy(), X1.copy())
    with pytest.raises(ValueError):
        adcli.grad(shape_mismatch, argnums=0)(X0.copy(), X1.copy())

    def repeated(x0, x1):
        v = x1 * 2.0
        v[np.array([0, 0])] = x0[:2]
        return np.sum(v)

    with pytest.raises(adcli.errors.UnsupportedError, match="repeated indices"):
        adcli.grad(repeated, argnums=0)(X0.copy(), X1.copy())


# --- joins of a plain array and a list of traced values -----------------------------------------

JOINS = {
    "concatenate": lambda x0, x1: np.sum(np.concatenate([x1, [np.tanh(np.mean(x0)), x0[0]]]) ** 2),
    "stack": lambda x0, x1: np.sum(np.stack([x1[:2], [np.tanh(np.mean(x0)), x0[0]]]) ** 2),
    "vstack": lambda x0, x1: np.sum(np.vstack([x1[:2], [np.tanh(np.mean(x0)), x0[0]]]) ** 2),
    "hstack": lambda x0, x1: np.sum(np.hstack((x1, [np.tanh(np.mean(x0))])) ** 2),
    "column_stack": lambda x0, x1: np.sum(np.column_stack([x1[:2], [np.tanh(np.mean(x0)), x0[0]]]) ** 2),
}


@pytest.mark.parametrize("name", sorted(JOINS))
def test_joins_of_a_plain_array_and_a_list_of_traced_values_do_not_depend_on_argnums(name):
    f = JOINS[name]
    both = check_grad(f, X0.copy(), X1.copy(), argnums=(0, 1))
    np.testing.assert_allclose(check_grad(f, X0.copy(), X1.copy(), argnums=0), both[0], rtol=1e-12)
    value, _ = adcli.value_and_grad(f, argnums=0)(X0.copy(), X1.copy())
    assert value == f(X0.copy(), X1.copy())
