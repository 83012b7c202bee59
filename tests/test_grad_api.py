"""adcli.grad / adcli.value_and_grad: argnums, argument types, pytrees, pass-through arguments,
input errors, zero and non-finite gradients, ownership of inputs and outputs, kwargs."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import adcli
from adcli.errors import AdcliError, GradInputError

Pair = collections.namedtuple("Pair", ["w", "b"])


def f3(a, b, c):
    return np.sum(a * 2.0) + np.sum(b**2) + np.sum(c * 5.0)


A = np.array([1.0, 2.0])
B = np.array([3.0, -1.0])
C = np.array([0.5, 0.25])


# --- argnums ------------------------------------------------------------------------------


@pytest.mark.parametrize("argnums,expected", [(0, A * 0 + 2.0), (1, 2 * B), (2, C * 0 + 5.0), (-1, C * 0 + 5.0),
                                              (-3, A * 0 + 2.0)])
def test_argnums_int(argnums, expected):
    g = adcli.grad(f3, argnums=argnums)(A, B, C)
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, expected)


@pytest.mark.parametrize("argnums", [(0, 2), (2, 0), (1,), (-1, 0), (0, 1, 2)])
def test_argnums_tuple(argnums):
    expected = {0: A * 0 + 2.0, 1: 2 * B, 2: C * 0 + 5.0}
    g = adcli.grad(f3, argnums=argnums)(A, B, C)
    assert type(g) is tuple and len(g) == len(argnums)
    for k, gk in zip(argnums, g):
        np.testing.assert_array_equal(gk, expected[k % 3])


def test_value_and_grad():
    v, g = adcli.value_and_grad(f3, argnums=(0, 1))(A, B, C)
    assert v == pytest.approx(f3(A, B, C))
    np.testing.assert_array_equal(g[0], [2.0, 2.0])
    np.testing.assert_array_equal(g[1], 2 * B)


def test_value_is_a_plain_number():
    v, _ = adcli.value_and_grad(lambda x: np.sum(np.sin(x)))(A)
    assert type(v) in (float, np.float64)
    assert v == pytest.approx(np.sum(np.sin(A)))


def test_same_argument_twice_in_argnums():
    # d/da of f(a, b) listed twice: either both entries are the gradient, or the call is refused
    # as a bad argnums (GradInputError) -- not reported as "grad of grad".
    try:
        g = adcli.grad(lambda a, b: np.sum(a * b), argnums=(0, 0))(A, B)
    except GradInputError as e:
        assert "argnums" in str(e)
    else:
        np.testing.assert_array_equal(g[0], B)
        np.testing.assert_array_equal(g[1], B)


def test_argnums_out_of_range():
    with pytest.raises(GradInputError, match="argnums"):
        adcli.grad(f3, argnums=3)(A, B, C)
    with pytest.raises(GradInputError):
        adcli.grad(f3, argnums=(0, -4))(A, B, C)


def test_wrapper_keeps_function_name():
    def my_loss(x):
        return np.sum(x)

    assert adcli.grad(my_loss).__name__ == "my_loss"
    assert adcli.value_and_grad(my_loss).__name__ == "my_loss"


# --- argument types -------------------------------------------------------------------------


def test_python_float_argument_gives_float_gradient():
    g = adcli.grad(lambda a: a**3 + np.sin(a))(0.5)
    assert type(g) is float
    assert g == pytest.approx(3 * 0.25 + np.cos(0.5), rel=1e-14)


def test_python_float_argument_that_output_ignores():
    g = adcli.grad(lambda a, b: b * 2.0, argnums=(0, 1))(1.0, 2.0)
    assert type(g[0]) is float and g[0] == 0.0
    assert type(g[1]) is float and g[1] == 2.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_array_gradient_has_its_dtype(dtype):
    x = np.array([0.5, 1.0, 1.5], dtype=dtype)
    g = adcli.grad(lambda x: np.sum(x * x))(x)
    assert g.dtype == dtype and g.shape == (3,)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-3)


def test_float32_in_float64_computation_gets_float32_gradient():
    x = np.array([0.5, 1.0], dtype=np.float32)
    g = adcli.grad(lambda x: np.sum(x * np.array([1.0, 3.0])))(x)  # promotes to float64 inside
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.array([1.0, 3.0], np.float32))


@pytest.mark.parametrize("scalar", [np.float64(0.75), np.float32(0.75)])
def test_numpy_scalar_argument(scalar):
    g = adcli.grad(lambda a: a * a * 4.0)(scalar)
    assert type(g) is type(scalar)
    assert g == pytest.approx(6.0)


def test_0d_array_argument():
    x = np.array(0.75)
    g = adcli.grad(lambda a: a * a * 4.0)(x)
    assert type(g) is np.ndarray and g.shape == () and g.dtype == np.float64
    assert float(g) == 6.0


def test_2d_fortran_and_strided_arguments():
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    g = adcli.grad(lambda x: np.sum(x**2))(x)
    np.testing.assert_array_equal(g, 2 * x)
    big = np.arange(24.0).reshape(4, 6)
    view = big[::2, 1::2]
    g = adcli.grad(lambda x: np.sum(x**2))(view)
    assert g.shape == view.shape
    np.testing.assert_array_equal(g, 2 * view)


# --- pytrees --------------------------------------------------------------------------------


def test_nested_pytree_gradient_has_the_same_structure():
    params = {
        "W": np.array([[1.0, 2.0], [3.0, 4.0]]),
        "layers": [np.array([0.5, -0.5]), (2.0, np.float64(3.0))],
        "pair": Pair(w=np.array([1.0]), b=0.25),
    }

    def loss(p):
        w1, (s, t) = p["layers"]
        return np.sum(p["W"] ** 2) + np.sum(w1 * 3.0) + s * t + np.sum(p["pair"].w * p["pair"].b)

    g = adcli.grad(loss)(params)
    assert type(g) is dict and list(g) == ["W", "layers", "pair"]
    np.testing.assert_array_equal(g["W"], 2 * params["W"])
    assert type(g["layers"]) is list and type(g["layers"][1]) is tuple
    np.testing.assert_array_equal(g["layers"][0], [3.0, 3.0])
    assert type(g["layers"][1][0]) is float and g["layers"][1][0] == 3.0
    assert type(g["layers"][1][1]) is np.float64 and g["layers"][1][1] == 2.0
    assert type(g["pair"]) is Pair
    np.testing.assert_array_equal(g["pair"].w, [0.25])
    assert type(g["pair"].b) is float and g["pair"].b == 1.0


def test_pytree_argument_with_tuple_argnums():
    g = adcli.grad(lambda p, q: np.sum(p[0] * q["a"]) + p[1], argnums=(0, 1))([A, 2.0], {"a": B})
    np.testing.assert_array_equal(g[0][0], B)
    assert g[0][1] == 1.0
    np.testing.assert_array_equal(g[1]["a"], A)


def test_pytree_with_non_numeric_leaves_passes_them_as_none():
    params = {"w": np.array([1.0, 2.0]), "name": "layer1", "act": np.tanh, "extra": None}

    def loss(p):
        assert p["name"] == "layer1" and p["act"] is np.tanh and p["extra"] is None
        return np.sum(p["act"](p["w"]))

    g = adcli.grad(loss)(params)
    assert set(g) == {"w", "name", "act", "extra"}
    np.testing.assert_allclose(g["w"], 1 - np.tanh(params["w"]) ** 2)
    assert g["name"] is None and g["act"] is None and g["extra"] is None


def test_empty_containers_in_pytree():
    g = adcli.grad(lambda p: np.sum(p["x"]))({"x": A, "empty": [], "e2": {}})
    assert g["empty"] == [] and g["e2"] == {}


# --- pass-through arguments ----------------------------------------------------------------


def test_non_differentiated_arguments_are_passed_untouched():
    n = 3
    idx = np.array([0, 1])
    label = "abc"
    fn = np.cos
    plain = np.array([1.0, 2.0])
    seen = {}

    def f(x, n, idx, label, none, fn, plain):
        seen.update(n=n, idx=idx, label=label, none=none, fn=fn, plain=plain)
        return np.sum(fn(x[idx]) * n) + np.sum(plain)

    g = adcli.grad(f)(A, n, idx, label, None, fn, plain)
    assert seen["n"] is n and seen["idx"] is idx and seen["label"] is label
    assert seen["none"] is None and seen["fn"] is fn and seen["plain"] is plain
    assert type(seen["plain"]) is np.ndarray  # not traced: only argnums are
    np.testing.assert_allclose(g, -np.sin(A) * 3)


@pytest.mark.parametrize(
    "arg,word",
    [
        (3, "int"),
        (np.array([1, 2]), "int64"),
        (np.int64(4), "int64"),
        (True, "bool"),
        ("text", "str"),
        (None, "None"),
        (np.array([True, False]), "bool"),
        (1 + 2j, "complex"),
    ],
)
def test_non_float_argument_in_argnums_raises(arg, word):
    def my_fn(x, y):
        return np.sum(y)

    with pytest.raises(GradInputError) as info:
        adcli.grad(my_fn, argnums=0)(arg, A)
    msg = str(info.value)
    assert "argument 0" in msg and "my_fn" in msg and word in msg


def test_int_inside_differentiated_dict_raises_naming_the_path():
    def loss(p):
        return np.sum(p["w"]) * p["n"]

    with pytest.raises(GradInputError) as info:
        adcli.grad(loss)({"w": A, "n": 3})
    msg = str(info.value)
    assert "['n']" in msg and "int" in msg


def test_int_array_inside_differentiated_list_raises():
    with pytest.raises(GradInputError) as info:
        adcli.grad(lambda p: np.sum(p[0]))([A, np.arange(3)])
    assert "[1]" in str(info.value)


@pytest.mark.parametrize("out_shape", [(2,), (2, 1), (1, 2)])  # size 1 is accepted: test_ported_spelling.py
def test_non_scalar_output_raises_naming_the_shape(out_shape):
    def vec(x):
        return np.reshape(x[: int(np.prod(out_shape))] * 2.0, out_shape)

    with pytest.raises(GradInputError) as info:
        adcli.grad(vec)(A)
    msg = str(info.value)
    assert str(out_shape) in msg and "vec" in msg


def test_non_scalar_plain_output_raises():
    with pytest.raises(GradInputError, match=r"\(3,\)"):
        adcli.grad(lambda x: np.ones(3))(A)


def test_0d_array_output_is_a_scalar():
    v, g = adcli.value_and_grad(lambda x: np.sum(x, keepdims=True).reshape(()))(A)
    assert float(v) == 3.0
    np.testing.assert_array_equal(g, [1.0, 1.0])


# --- outputs that do not depend on the input ---------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda x: 3.0,
        lambda x: np.float64(2.0),
        lambda x: np.sum(np.ones(3)),
        lambda x: np.sum(x > 0) * 1.0,
        lambda x: np.sum(np.floor(x)),
        lambda x: np.sum(adcli.stop_gradient(x)),
        lambda x: x[0] * 0.0 + 1.0,
    ],
    ids=["float", "np.float64", "plain-sum", "comparison", "floor", "stop_gradient", "times-zero"],
)
def test_output_not_depending_on_input_gives_zero_gradient(f):
    x = np.array([1.5, -0.5])
    g = adcli.grad(f)(x)
    assert type(g) is np.ndarray and g.dtype == np.float64 and g.shape == (2,)
    np.testing.assert_array_equal(g, [0.0, 0.0])
    assert g.flags.writeable


def test_zero_gradient_for_float_and_pytree_arguments():
    g = adcli.grad(lambda a, p: 1.0, argnums=(0, 1))(2.0, {"w": np.zeros(2, np.float32), "s": np.float64(1)})
    assert type(g[0]) is float and g[0] == 0.0
    assert g[1]["w"].dtype == np.float32
    np.testing.assert_array_equal(g[1]["w"], [0.0, 0.0])
    assert type(g[1]["s"]) is np.float64 and g[1]["s"] == 0.0


# --- non-finite values --------------------------------------------------------------------


def test_log_at_zero_gives_inf_gradient():
    x = np.array([0.0, 1.0, 2.0])
    with np.errstate(all="ignore"):
        v, g = adcli.value_and_grad(lambda x: np.sum(np.log(x)))(x)
    assert v == -np.inf
    assert g[0] == np.inf
    np.testing.assert_array_equal(g[1:], [1.0, 0.5])


def test_sqrt_at_negative_gives_nan_gradient():
    x = np.array([-1.0, 4.0])
    with np.errstate(all="ignore"):
        v, g = adcli.value_and_grad(lambda x: np.sum(np.sqrt(x)))(x)
    assert np.isnan(v)
    assert np.isnan(g[0])
    assert g[1] == 0.25


def test_log_at_negative_gives_nan_value():
    x = np.array([-2.0, 1.0])
    with np.errstate(all="ignore"):
        v, g = adcli.value_and_grad(lambda x: np.sum(np.log(x)))(x)
    assert np.isnan(v)
    assert g[1] == 1.0
    assert g[0] == -0.5 or np.isnan(g[0])  # the 1/x formula (autograd, JAX) or nan: never a crash


def test_nan_input_propagates():
    x = np.array([np.nan, 2.0])
    v, g = adcli.value_and_grad(lambda x: np.sum(x**2))(x)
    assert np.isnan(v)
    assert np.isnan(g[0]) and g[1] == 4.0


def test_inf_input_propagates():
    x = np.array([np.inf, 2.0])
    with np.errstate(all="ignore"):
        v, g = adcli.value_and_grad(lambda x: np.sum(np.exp(-x)))(x)
    assert v == pytest.approx(np.exp(-2.0))
    assert g[0] == 0.0 and g[1] == pytest.approx(-np.exp(-2.0))


# --- ownership of inputs and gradients -----------------------------------------------------

BODIES = {
    "sum": lambda x: np.sum(x),
    "sum-of-square": lambda x: np.sum(x * x),
    "copy-and-assign": lambda x: _copy_assign(x),
    "reshape-transpose": lambda x: np.sum(x.reshape(-1, 1).T * 2.0),
    "broadcast": lambda x: np.sum(np.broadcast_to(x, (3,) + x.shape)),
    "index": lambda x: x[0] * 3.0,
    "mean": lambda x: np.mean(x),
    "inplace-on-copy": lambda x: _inplace(x),
    "identity-sum-keepdims": lambda x: np.sum(np.sum(x, keepdims=True)),
}


def _copy_assign(x):
    y = x.copy()
    y[0] = 5.0
    return np.sum(y * x)


def _inplace(x):
    y = x * 1.0
    y += 1.0
    y *= x
    return np.sum(y)


@pytest.mark.parametrize("name", list(BODIES))
def test_user_inputs_are_never_modified(name):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    keep = x.copy()
    adcli.grad(BODIES[name])(x)
    np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("name", list(BODIES))
def test_returned_gradients_are_writeable_and_own_their_memory(name):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    g = adcli.grad(BODIES[name])(x)
    assert g.flags.writeable
    assert g.flags.owndata and g.base is None
    assert not np.shares_memory(g, x)
    g[0] = 123.0  # must not raise, must not affect the next call
    g2 = adcli.grad(BODIES[name])(x)
    assert g2[0] != 123.0


def test_gradients_of_two_arguments_do_not_share_memory():
    ga, gb = adcli.grad(lambda a, b: np.sum(a + b), argnums=(0, 1))(A, B)
    assert not np.shares_memory(ga, gb)
    ga[0] = 7.0
    assert gb[0] == 1.0


def test_pytree_gradients_do_not_share_memory():
    g = adcli.grad(lambda p: np.sum(np.concatenate([p["a"], p["b"]])))({"a": A, "b": B})
    for leaf in (g["a"], g["b"]):
        assert leaf.flags.writeable and leaf.flags.owndata


def test_pytree_input_containers_not_modified():
    params = {"w": np.array([1.0, 2.0]), "l": [np.array([3.0])]}
    adcli.grad(lambda p: np.sum(p["w"]) + np.sum(p["l"][0]))(params)
    assert type(params["w"]) is np.ndarray and type(params["l"][0]) is np.ndarray
    np.testing.assert_array_equal(params["w"], [1.0, 2.0])


def test_read_only_input_array():
    x = np.array([1.0, 2.0])
    x.flags.writeable = False
    g = adcli.grad(lambda x: np.sum(x**2))(x)
    np.testing.assert_array_equal(g, [2.0, 4.0])
    assert g.flags.writeable


# --- kwargs ---------------------------------------------------------------------------------


def test_kwargs_forwarded():
    def f(x, *, scale, offset=0.0):
        return np.sum(x * scale) + offset

    v, g = adcli.value_and_grad(f)(A, scale=3.0, offset=1.0)
    assert v == 10.0
    np.testing.assert_array_equal(g, [3.0, 3.0])


def test_kwargs_are_not_differentiated():
    def f(x, w=None):
        assert type(w) is np.ndarray
        return np.sum(x * w)

    g = adcli.grad(f)(A, w=B)
    np.testing.assert_array_equal(g, B)


def test_default_arguments_and_varargs():
    def f(x, *rest, k=2.0):
        return np.sum(x * k) + sum(np.sum(r) for r in rest)

    g = adcli.grad(f, argnums=(0, 2))(A, B, C, k=4.0)
    np.testing.assert_array_equal(g[0], [4.0, 4.0])
    np.testing.assert_array_equal(g[1], [1.0, 1.0])


def test_errors_are_adcli_errors():
    assert issubclass(GradInputError, AdcliError) and issubclass(GradInputError, TypeError)


def test_repeated_calls_are_independent():
    gf = adcli.grad(lambda x: np.sum(x**3))
    g1 = gf(np.array([1.0, 2.0]))
    g2 = gf(np.array([3.0]))
    np.testing.assert_array_equal(g1, [3.0, 12.0])
    np.testing.assert_array_equal(g2, [27.0])
