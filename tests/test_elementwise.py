"""Elementwise ufuncs and Python operators on tracers, against finite differences.

Every ufunc in UFUNCS is covered by iterating over the table; an entry added there
without a domain below gets the default domain (and a test failure if that is wrong, which is
the point: add its domain here).
"""

from __future__ import annotations

import operator
import zlib

import numpy as np
import pytest

import adcli
from adcli.engine.core import Tracer, make_tracer
from adcli.engine.registry import UFUNCS
from adcli.engine.rules.elementwise import NONDIFF_UFUNCS
from adcli.engine.tape import Tape
from adcli.testing import check_grad

# --- domains --------------------------------------------------------------------------------
# A domain is a function (rng, shape) -> values. Intervals keep a margin of >= 0.5 from any
# singularity: check_grad's float32 steps reach 0.1 along N(0, 1) directions.


def interval(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def away_from_zero(lo=0.6, hi=2.0):
    def make(rng, shape):
        return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)

    return make


def remainder_x(rng, shape):
    # an integer plus a fraction well inside (0, 1): with y near 1, x / y stays between integers
    return rng.integers(-3, 4, shape) + rng.uniform(0.35, 0.65, shape)


DEFAULT = interval(-1.5, 1.5)
POSITIVE = interval(0.6, 2.0)

UNARY_DOMAIN = {
    np.arcsin: interval(-0.4, 0.4),
    np.arccos: interval(-0.4, 0.4),
    np.arctanh: interval(-0.4, 0.4),
    np.arccosh: interval(1.6, 3.0),
    np.log: POSITIVE,
    np.log2: POSITIVE,
    np.log10: POSITIVE,
    np.sqrt: POSITIVE,
    np.cbrt: POSITIVE,
    np.reciprocal: POSITIVE,
    np.log1p: interval(-0.3, 2.0),
    np.absolute: away_from_zero(),
    np.fabs: away_from_zero(),
    np.tan: interval(-1.0, 1.0),
}
BINARY_DOMAIN = {
    np.power: (POSITIVE, interval(-1.5, 1.5)),
    np.float_power: (POSITIVE, interval(-1.5, 1.5)),
    np.true_divide: (DEFAULT, away_from_zero()),
    np.remainder: (remainder_x, interval(0.97, 1.03)),
    np.fmod: (remainder_x, interval(0.97, 1.03)),
    np.copysign: (DEFAULT, away_from_zero()),
    np.arctan2: (DEFAULT, POSITIVE),
    np.hypot: (POSITIVE, POSITIVE),
    np.ldexp: (DEFAULT, lambda rng, shape: rng.integers(-2, 3, shape)),
    np.heaviside: (away_from_zero(), DEFAULT),  # off its step (test_heaviside_is_h_at_zero: on it)
}
# ufuncs whose second argument must be an integer (so it can only be a plain value)
INT_SECOND = {np.ldexp}
# a Python float inside each argument's domain, for the "array with Python float" cases
PY_FLOAT = {
    np.power: (1.3, 0.7),
    np.float_power: (1.3, 0.7),
    np.remainder: (2.5, 1.01),
    np.fmod: (2.5, 1.01),
    np.hypot: (1.1, 0.8),
    np.arctan2: (0.4, 1.1),
    np.true_divide: (0.7, 1.3),
    np.copysign: (0.7, -1.3),
    np.ldexp: (0.7, 2),
}

# Generalized ufuncs in the table (matmul, vecdot, ...: ufunc.signature is set) are contractions,
# not elementwise: tests/test_contract*.py covers them.
ELEMENTWISE = [u for u in UFUNCS if u.signature is None]
UNARY = sorted((u for u in ELEMENTWISE if u.nin == 1), key=lambda u: u.__name__)
BINARY = sorted((u for u in ELEMENTWISE if u.nin == 2), key=lambda u: u.__name__)


def test_table_is_only_unary_and_binary():
    assert set(UNARY) | set(BINARY) == set(ELEMENTWISE)
    assert len(UNARY) > 30 and len(BINARY) > 10


def sample(domain, rng, shape, kind, dtype):
    v = np.asarray(domain(rng, () if kind in ("float", "npscalar") else shape))
    if kind == "float":
        return float(v) if v.dtype.kind == "f" else int(v)
    if v.dtype.kind != "f":
        return v if kind != "npscalar" else v[()]
    if kind == "npscalar":
        return np.float64(v)
    return v.astype(dtype)


def seed_of(*parts):
    return zlib.crc32(repr(parts).encode())


def fixed_weights(shape, seed=1):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def weighted_sum(y):
    """A scalar depending on every entry of y with distinct weights (so a permuted or mis-summed
    gradient cannot pass)."""
    if np.ndim(y) == 0:
        return y * 1.3
    return np.sum(y * fixed_weights(np.shape(y)).astype(y.dtype))


SHAPES = [("float", ()), ("npscalar", ()), ("array", ()), ("array", (5,)), ("array", (3, 4))]
DTYPES = [np.float64, np.float32]


# --- unary ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("kind,shape", SHAPES, ids=[f"{k}{s}" for k, s in SHAPES])
@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
def test_unary_ufunc(ufunc, kind, shape, dtype):
    if kind in ("float", "npscalar") and dtype is np.float32:
        dtype = np.float64  # Python floats and np.float64 scalars have one dtype
    rng = np.random.default_rng(seed_of(ufunc.__name__, kind, shape))
    x = sample(UNARY_DOMAIN.get(ufunc, DEFAULT), rng, shape, kind, dtype)

    def f(x):
        return weighted_sum(ufunc(x))

    g = check_grad(f, x)
    if kind == "array":
        assert g.dtype == x.dtype and g.shape == x.shape
    elif kind == "float":
        assert type(g) is float
    else:
        assert type(g) is np.float64


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
def test_unary_ufunc_value_matches_numpy(ufunc):
    rng = np.random.default_rng(3)
    x = UNARY_DOMAIN.get(ufunc, DEFAULT)(rng, (4,))
    value, _ = adcli.value_and_grad(lambda x: np.sum(ufunc(x)))(x)
    assert value == pytest.approx(np.sum(ufunc(x)), rel=1e-15)


# --- binary -----------------------------------------------------------------------------------

BIN_SHAPES = [
    ("same-scalar-floats", "float", (), "float", ()),
    ("0d", "array", (), "array", ()),
    ("1d", "array", (5,), "array", (5,)),
    ("2d", "array", (3, 4), "array", (3, 4)),
    ("2d-with-1d", "array", (3, 4), "array", (4,)),
    ("1d-with-2d", "array", (4,), "array", (3, 4)),
    ("col-with-row", "array", (3, 1), "array", (1, 4)),
    ("2d-with-0d", "array", (3, 4), "array", ()),
    ("npscalar-with-1d", "npscalar", (), "array", (5,)),
]
WHICH = ["both", "first", "second"]


def _binary_args(ufunc, kx, sx, ky, sy, dtype, seed):
    rng = np.random.default_rng(seed)
    dx, dy = BINARY_DOMAIN.get(ufunc, (DEFAULT, DEFAULT))
    x = sample(dx, rng, sx, kx, dtype)
    y = sample(dy, rng, sy, ky, dtype)
    return x, y


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("case", BIN_SHAPES, ids=[c[0] for c in BIN_SHAPES])
@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
def test_binary_ufunc(ufunc, case, which, dtype):
    _, kx, sx, ky, sy = case
    if ufunc in INT_SECOND and which != "first":
        which = "first"  # the integer argument cannot be differentiated
    x, y = _binary_args(ufunc, kx, sx, ky, sy, dtype, seed_of(ufunc.__name__, case[0]))
    argnums = {"both": (0, 1), "first": 0, "second": 1}[which]

    def f(x, y):
        return weighted_sum(ufunc(x, y))

    grads = check_grad(f, x, y, argnums=argnums)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for k, g in zip((argnums,) if isinstance(argnums, int) else argnums, grads):
        arg = (x, y)[k]
        assert type(g) is type(arg)
        if isinstance(arg, np.ndarray):
            assert g.shape == arg.shape and g.dtype == arg.dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("shape_h", [(), (4,), (3, 4)])
def test_heaviside_is_h_at_zero(shape_h, dtype):
    """heaviside(x, h) is h where x == 0: its gradient in h counts those places (and is 0
    elsewhere); in x it is 0 (flat off the step)."""
    x = np.array([[0.0, -1.0, 0.0, 2.0], [1.0, 0.0, -0.0, 3.0], [0.5, -2.0, 0.0, 0.0]], dtype=dtype)
    h = np.full(shape_h, 0.5, dtype=dtype)
    w = np.arange(1.0, 13.0).reshape(3, 4)
    gh = check_grad(lambda h: np.sum(w * np.heaviside(x, h)), h)
    at_zero = np.broadcast_to(np.where(x == 0, w, 0.0), (3, 4))
    expected = at_zero.sum() if shape_h == () else at_zero.sum(axis=0) if shape_h == (4,) else at_zero
    np.testing.assert_allclose(gh, expected, rtol=1e-6)
    gx = adcli.grad(lambda x: np.sum(w * np.heaviside(x, 0.5)))(x + 0.25)
    assert not np.any(gx)


@pytest.mark.parametrize("side", ["array-op-float", "float-op-array"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
def test_binary_ufunc_with_python_float(ufunc, dtype, side):
    rng = np.random.default_rng(seed_of(ufunc.__name__))
    dx, dy = BINARY_DOMAIN.get(ufunc, (DEFAULT, DEFAULT))
    cx, cy = PY_FLOAT.get(ufunc, (0.7, -0.4))
    if side == "array-op-float":
        x = dx(rng, (3, 4)).astype(dtype)

        def f(x):
            return weighted_sum(ufunc(x, cy))
    else:
        if ufunc in INT_SECOND:
            x = rng.integers(-2, 3, (3, 4))
            # second argument integer: differentiate nothing but the value must still be right
            v, g = adcli.value_and_grad(lambda c: weighted_sum(ufunc(c, x)))(cx)
            assert v == pytest.approx(float(weighted_sum(ufunc(cx, x))))
            assert g == pytest.approx(float(np.sum(fixed_weights((3, 4)) * np.ldexp(1.0, x))))
            return
        x = dy(rng, (3, 4)).astype(dtype)

        def f(x):
            return weighted_sum(ufunc(cx, x))

    g = check_grad(f, x)
    assert g.dtype == dtype


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
def test_binary_result_dtype_float32_stays_float32(ufunc):
    # NumPy 2 keeps float32 with Python floats; the engine's forward value must match NumPy's.
    rng = np.random.default_rng(0)
    dx, dy = BINARY_DOMAIN.get(ufunc, (DEFAULT, DEFAULT))
    x = dx(rng, (4,)).astype(np.float32)
    cy = PY_FLOAT.get(ufunc, (0.7, -0.4))[1]
    seen = {}

    def f(x):
        r = ufunc(x, cy)
        seen["dtype"] = r.dtype
        return np.sum(r)

    adcli.grad(f)(x)
    assert seen["dtype"] == ufunc(x, cy).dtype


# --- power ------------------------------------------------------------------------------------


def test_power_both_traced_by_hand():
    x = np.array([0.5, 1.5, 2.0])
    y = np.array([2.0, -1.0, 0.5])
    gx, gy = adcli.grad(lambda x, y: np.sum(np.power(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, y * x ** (y - 1), rtol=1e-14)
    np.testing.assert_allclose(gy, x**y * np.log(x), rtol=1e-14)


def test_power_at_zero_base():
    # x == 0: d(x**y)/dx = y * 0**(y-1) = 0 for y > 1 (and 1 for y == 1); d/dy = 0 for y > 0
    x = np.array([0.0, 0.0, 0.0, 2.0])
    y = np.array([2.0, 3.0, 1.0, 1.5])
    gx, gy = adcli.grad(lambda x, y: np.sum(x**y), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, [0.0, 0.0, 1.0, 1.5 * np.sqrt(2.0)], rtol=1e-14)
    np.testing.assert_allclose(gy, [0.0, 0.0, 0.0, 2.0**1.5 * np.log(2.0)], rtol=1e-14)
    assert np.all(np.isfinite(gx)) and np.all(np.isfinite(gy))
    # finite differences in y are valid at x == 0 (x stays fixed)
    check_grad(lambda y: np.sum(x**y), y)


def test_power_zero_exponent_at_zero_base():
    # x ** 0 == 1 everywhere (NumPy: 0.0 ** 0 == 1), so its derivative is 0, also at x == 0.
    x = np.array([0.0, 1.0, -2.0])
    with np.errstate(all="ignore"):
        g = adcli.grad(lambda x: np.sum(x**0.0))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("p", [2, 3, 2.0, -1])
def test_power_integer_exponent_negative_base(p):
    x = np.array([-1.5, -0.7, 0.8])
    g = check_grad(lambda x: np.sum(x**p), x)
    np.testing.assert_allclose(g, p * x ** (p - 1), rtol=1e-12)


# --- maximum / minimum with ties ------------------------------------------------------------


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum, np.fmax, np.fmin], ids=lambda u: u.__name__)
def test_max_min_ties_split_evenly(ufunc):
    x = np.array([1.0, 2.0, 3.0, -1.0])
    y = np.array([1.0, 0.0, 5.0, -1.0])
    gx, gy = adcli.grad(lambda x, y: np.sum(ufunc(x, y) * np.array([1.0, 2.0, 3.0, 4.0])), argnums=(0, 1))(x, y)
    if ufunc in (np.maximum, np.fmax):
        np.testing.assert_array_equal(gx, [0.5, 2.0, 0.0, 2.0])
        np.testing.assert_array_equal(gy, [0.5, 0.0, 3.0, 2.0])
    else:
        np.testing.assert_array_equal(gx, [0.5, 0.0, 3.0, 2.0])
        np.testing.assert_array_equal(gy, [0.5, 2.0, 0.0, 2.0])


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum], ids=lambda u: u.__name__)
def test_max_min_of_a_value_with_itself(ufunc):
    x = np.array([1.0, -2.0])
    np.testing.assert_array_equal(adcli.grad(lambda x: np.sum(ufunc(x, x)))(x), [1.0, 1.0])


def test_maximum_tie_with_plain_constant_and_broadcast():
    # relu-style: maximum(x, 0) with x == 0 exactly gets half; broadcasting a row against columns
    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(adcli.grad(lambda x: np.sum(np.maximum(x, 0.0)))(x), [0.0, 0.5, 1.0])
    row = np.array([1.0, 2.0, 3.0])
    col = np.array([[2.0], [0.0]])
    gr, gc = adcli.grad(lambda r, c: np.sum(np.maximum(r, c)), argnums=(0, 1))(row, col)
    # pairs (row, col): col 2 vs [1,2,3] -> c,tie,r ; col 0 vs [1,2,3] -> r,r,r
    np.testing.assert_array_equal(gr, [1.0, 1.5, 2.0])
    np.testing.assert_array_equal(gc, [[1.5], [0.0]])


def _with_ties_and_nans(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    return x, y


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum, np.fmax, np.fmin], ids=lambda u: u.__name__)
@pytest.mark.parametrize("case", ["plain", "ties", "nans", "broadcast", "big", "float32"])
def test_max_min_of_two_traced_values_is_each_ones_share_to_the_bit(ufunc, case):
    # With both arguments traced the node computes both shares in one call (a joint VJP that
    # shares the masks and the tie check): the same bits as differentiating each argument alone,
    # which takes the one-argument path.
    rng = np.random.default_rng(zlib.crc32(f"{ufunc.__name__}{case}".encode()))
    shape = (70, 70) if case == "big" else (5, 6)  # big: above the in-place size
    x, y = _with_ties_and_nans(rng, shape, np.float32 if case == "float32" else np.float64)
    if case == "ties":
        y[::2] = x[::2]
    if case == "nans":
        x[0, 1] = y[1, 2] = np.nan
        x[2, 2] = y[2, 2] = np.nan
        y[3, 3] = x[3, 3]
    if case == "broadcast":
        y = y[:1] * 0 + x[2]  # a row, equal to one of x's rows: a tie in every column
    w = rng.standard_normal(shape)

    def f(a, b):
        return np.sum(ufunc(a, b) * w)

    with np.errstate(invalid="ignore"):
        gx, gy = adcli.grad(f, argnums=(0, 1))(x, y)
        alone_x = adcli.grad(f, argnums=0)(x, y)
        alone_y = adcli.grad(f, argnums=1)(x, y)
    np.testing.assert_array_equal(gx, alone_x)
    np.testing.assert_array_equal(gy, alone_y)
    assert gx.dtype == x.dtype and gy.dtype == y.dtype and gy.shape == y.shape
    if case == "plain":  # and they are the masks times w
        pick = (x >= y) if ufunc in (np.maximum, np.fmax) else (x <= y)
        np.testing.assert_array_equal(gx, np.where(pick, w, 0.0))
        np.testing.assert_array_equal(gy, np.where(pick, 0.0, w))


# --- non-differentiable ufuncs ----------------------------------------------------------------


@pytest.mark.parametrize("ufunc", sorted(NONDIFF_UFUNCS, key=lambda u: u.__name__), ids=lambda u: u.__name__)
def test_nondiff_ufunc_returns_plain_values(ufunc):
    x = np.array([-1.5, 0.0, 0.25, 2.0, 3.5])
    args = (x,) if ufunc.nin == 1 else (x, np.array([2.0, 1.0, -0.5, 2.0, 1.5]))
    try:
        expected = ufunc(*args)
    except TypeError as e:  # e.g. bitwise ops on floats: the traced call must fail the same way
        plain_error = type(e)
    else:
        plain_error = None
    seen = {}

    def f(x):
        try:
            r = ufunc(x, *args[1:])
        except TypeError as e:
            seen["error"] = type(e)
            return np.sum(x * 2.0)
        seen["r"] = r
        return np.sum(x * 2.0)

    g = adcli.grad(f)(x)
    np.testing.assert_array_equal(g, np.full(5, 2.0))
    if plain_error is not None:
        assert issubclass(seen.get("error", type(None)), TypeError)
    else:
        r = seen["r"]
        assert not isinstance(r, Tracer)
        assert isinstance(r, np.ndarray)
        np.testing.assert_array_equal(r, expected)


def test_nondiff_result_used_in_computation_is_constant():
    x = np.array([1.7, -0.3, 2.5])
    g = adcli.grad(lambda x: np.sum(np.floor(x) * x))(x)
    np.testing.assert_array_equal(g, np.floor(x))
    g = adcli.grad(lambda x: np.sum(np.sign(x) * x))(x)  # |x|
    np.testing.assert_array_equal(g, [1.0, -1.0, 1.0])


def test_nondiff_ufunc_on_traced_scalar():
    def f(x):
        assert not isinstance(np.floor(x[0]), Tracer)
        assert type(np.isnan(x[1])) in (bool, np.bool_)
        return x[0] * np.floor(x[0])

    np.testing.assert_array_equal(adcli.grad(f)(np.array([2.5, 1.0])), [2.0, 0.0])


# --- Python operators on tracers ------------------------------------------------------------

BINOPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.mod]


def _op_args(op, rng, shape):
    if op is operator.pow:
        return rng.uniform(0.6, 2.0, shape), rng.uniform(-1.5, 1.5, shape)
    if op is operator.mod:
        return remainder_x(rng, shape), rng.uniform(0.97, 1.03, shape)
    if op is operator.truediv:
        return rng.uniform(-1.5, 1.5, shape), away_from_zero()(rng, shape)
    return rng.uniform(-1.5, 1.5, shape), rng.uniform(-1.5, 1.5, shape)


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
@pytest.mark.parametrize("op", BINOPS, ids=lambda o: o.__name__)
def test_python_operator_arrays(op, shape, which):
    rng = np.random.default_rng(7)
    x, y = _op_args(op, rng, shape)
    argnums = {"both": (0, 1), "first": 0, "second": 1}[which]
    check_grad(lambda x, y: weighted_sum(op(x, y)), x, y, argnums=argnums)


@pytest.mark.parametrize("op", BINOPS, ids=lambda o: o.__name__)
def test_python_operator_python_floats(op):
    rng = np.random.default_rng(8)
    x, y = (float(v) for v in _op_args(op, rng, ()))
    gx, gy = check_grad(lambda x, y: op(x, y), x, y, argnums=(0, 1))
    assert type(gx) is float and type(gy) is float


@pytest.mark.parametrize("const", ["npfloat64", "plain-array", "python-float", "npfloat32"])
@pytest.mark.parametrize("side", ["tracer-left", "tracer-right"])
@pytest.mark.parametrize("op", BINOPS, ids=lambda o: o.__name__)
def test_python_operator_with_constants(op, side, const):
    rng = np.random.default_rng(9)
    x, y = _op_args(op, rng, (4,))
    tx, cy = (x, y) if side == "tracer-left" else (y, x)
    c = {"npfloat64": np.float64(cy[0]), "plain-array": cy, "python-float": float(cy[0]),
         "npfloat32": np.float32(cy[0])}[const]

    def f(t):
        r = op(t, c) if side == "tracer-left" else op(c, t)
        # (check_grad also calls f on plain arrays, for the finite differences)
        assert isinstance(r, Tracer) == isinstance(t, Tracer), (
            f"{op.__name__} with {const} on the {side} gave {type(r).__name__}"
        )
        return weighted_sum(r)

    check_grad(f, tx)


@pytest.mark.parametrize("scalar", ["npfloat64", "python-float"])
def test_operators_on_traced_element_with_scalar_constant(scalar):
    # x[i] is a traced np.float64: the scalar fast paths must record too
    c = np.float64(1.7) if scalar == "npfloat64" else 1.7

    def f(x):
        a = x[0]
        return c * a + a * c - c / a + a / c + a**c + c**a - (c - a) + (a - c) + a % c

    g = check_grad(f, np.array([0.9, 3.0]))
    a = 0.9
    da = 2 * c + c / a**2 + 1 / c + c * a ** (c - 1) + c**a * np.log(c) + 1 + 1 + 1
    assert g[0] == pytest.approx(da, rel=1e-12)
    assert g[1] == 0.0


def test_unary_operators():
    x = np.array([-1.5, 0.5, 2.0])
    g = check_grad(lambda x: weighted_sum(-x) + weighted_sum(+x) * 2.0 + weighted_sum(abs(x) ** 2.0), x)
    w = fixed_weights((3,))
    np.testing.assert_allclose(g, -w + 2.0 * w + w * 2.0 * x, rtol=1e-13)


def test_unary_operators_on_scalars():
    g = adcli.grad(lambda a: abs(-a) * 3.0 + (+a))(-2.0)
    assert g == -3.0 + 1.0 and type(g) is float


def test_operators_on_one_value_used_many_times():
    x = np.array([0.3, -1.2])
    g = adcli.grad(lambda x: np.sum(x * x * x + x / (1.0 + x * x)))(x)
    np.testing.assert_allclose(g, 3 * x**2 + (1 - x**2) / (1 + x**2) ** 2, rtol=1e-13)


def test_floordiv_operator_is_constant():
    x = np.array([2.5, -1.5])

    def f(x):
        q = x // 1.0
        assert not isinstance(q, Tracer)
        return np.sum(q * x)

    np.testing.assert_array_equal(adcli.grad(f)(x), [2.0, -2.0])


# --- comparisons and control flow ----------------------------------------------------------

CMPS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", CMPS, ids=lambda o: o.__name__)
def test_comparisons_return_plain_bools(op):
    xv = np.array([1.0, 2.0, 3.0])
    yv = np.array([3.0, 2.0, 1.0])
    seen = {}

    def f(x, y):
        seen["arr"] = op(x, y)
        seen["arr_const"] = op(x, 2.0)
        seen["const_arr"] = op(2.0, x)
        seen["plain_arr"] = op(yv, x)
        seen["scalar"] = op(x[0], y[0])
        seen["scalar_np"] = op(x[1], np.float64(2.0))
        return np.sum(x * y)

    adcli.grad(f, argnums=(0, 1))(xv, yv)
    for key, expected in (("arr", op(xv, yv)), ("arr_const", op(xv, 2.0)), ("const_arr", op(2.0, xv)),
                          ("plain_arr", op(yv, xv))):
        r = seen[key]
        assert type(r) is np.ndarray and r.dtype == bool, key
        np.testing.assert_array_equal(r, expected)
    for key, expected in (("scalar", op(1.0, 3.0)), ("scalar_np", op(2.0, 2.0))):
        r = seen[key]
        assert type(r) in (bool, np.bool_), key
        assert bool(r) == expected


def test_if_on_traced_comparison_takes_the_primal_branch():
    def f(x):
        if x[0] > 0:
            return np.sum(x**2)
        return np.sum(x**3)

    xp = np.array([1.0, 2.0])
    xn = np.array([-1.0, 2.0])
    np.testing.assert_allclose(adcli.grad(f)(xp), 2 * xp)
    np.testing.assert_allclose(adcli.grad(f)(xn), 3 * xn**2)


def test_while_loop_on_traced_comparison():
    def f(x):
        y = x
        while np.sum(y) < 10.0:
            y = y * 2.0
        return np.sum(y)

    # 1 + 0.5 = 1.5 -> 3 -> 6 -> 12: three doublings
    g = adcli.grad(f)(np.array([1.0, 0.5]))
    np.testing.assert_array_equal(g, [8.0, 8.0])
    v, g = adcli.value_and_grad(f)(np.array([4.0, 7.0]))  # already >= 10: no doubling
    assert v == 11.0
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_scalar_while_loop_newton_sqrt():
    # Newton iteration for sqrt(a), stopping on a traced tolerance: d sqrt(a)/da = 1/(2 sqrt(a))
    def f(a):
        x = a
        while abs(x * x - a) > 1e-12:
            x = 0.5 * (x + a / x)
        return x

    g = adcli.grad(f)(2.0)
    assert g == pytest.approx(1 / (2 * np.sqrt(2.0)), rel=1e-8)


def test_truth_value_of_traced_array_follows_numpy():
    def f(x):
        with pytest.raises(ValueError):
            bool(x)  # the truth value of a 2-element array is ambiguous
        assert bool(x[0:1])
        assert bool(np.all(x > 0))
        return np.sum(x)

    adcli.grad(f)(np.array([1.0, 2.0]))


# --- divide's y-gradient: summed over y's broadcast axes before dividing by y ----------------


@pytest.mark.parametrize("y_shape", [(), (1,), (40,), (30, 1), (1, 40), (30, 40)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_divide_gradient_in_the_divisor_for_every_broadcast(y_shape, dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((30, 40)).astype(dtype)
    y = rng.uniform(0.5, 2.0, y_shape).astype(dtype)
    w = rng.standard_normal((30, 40))
    gx, gy = adcli.grad(lambda a, b: np.sum(w * (a / b)), argnums=(0, 1))(x, y)
    b64 = y.astype(np.float64)
    full = np.broadcast_to(-w * x / b64**2, (30, 40))  # d(a / b)/db for every output element
    lead = 2 - len(y_shape)
    expected = full.sum(axis=tuple(range(lead)) + tuple(lead + i for i, n in enumerate(y_shape) if n == 1), keepdims=False)
    np.testing.assert_allclose(gy, expected.reshape(y_shape), rtol=1e-4 if dtype == np.float32 else 1e-11)
    assert gy.shape == y.shape and gy.dtype == y.dtype and gx.dtype == x.dtype
    check_grad(lambda b: np.sum(w * (x.astype(np.float64) / b)), b64)


def test_divide_by_a_traced_python_float():
    x = np.linspace(1.0, 2.0, 500)
    g = adcli.grad(lambda s: np.sum(x / s))(3.0)
    assert g == pytest.approx(-np.sum(x) / 9.0, rel=1e-12)


# --- maximum without ties: the mask as g's dtype ------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_relu_gradient_without_ties_is_the_mask(dtype):
    x = np.random.default_rng(8).standard_normal((64, 64)).astype(dtype)
    g = adcli.grad(lambda v: np.sum(np.maximum(v, 0.0) * 3.0))(x)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g, np.where(x > 0, 3.0, 0.0).astype(dtype))


# --- operators on traced numbers: the type and value Python's operator gives -------------------


@pytest.mark.parametrize("value", [0.5 - 1.3, np.float32(-0.8), np.float64(-0.8), np.array(-0.8),
                                   np.array([-0.8, 2.0], dtype=np.float32)], ids=repr)
@pytest.mark.parametrize("op", [abs, operator.neg, operator.pos, lambda a: a ** 2.0, lambda a: 2.0 ** a,
                                lambda a: a % 0.3, lambda a: 5.0 % a], ids=["abs", "neg", "pos", "pow", "rpow", "mod", "rmod"])
def test_operators_give_pythons_type_and_numpys_bits(value, op):
    # abs() of a Python float stays a Python float (np.absolute would make it np.float64, which
    # NumPy 2 promotes with float32 arrays where a float is weak); 2.0 ** float32 is NumPy's
    # scalar power, not the ufunc's, which can differ in the last bit
    tape = Tape()
    got = op(make_tracer(value, tape.leaf(), tape)).value
    want = op(value)
    assert type(got) is type(want) and getattr(got, "dtype", None) == getattr(want, "dtype", None)
    assert np.array_equal(got, want)


def test_abs_of_a_traced_float_keeps_float32_arithmetic_float32():
    x2 = np.array([1.0], dtype=np.float32)

    def f(x1, x2):
        return np.sum(np.arctan2(abs(x1 - 1.3), np.exp(np.tanh(x2))))

    value, (_, g2) = adcli.value_and_grad(f, argnums=(0, 1))(0.5, x2)
    assert value == f(0.5, x2) and type(value) is type(f(0.5, x2)) and g2.dtype == np.float32


@pytest.mark.parametrize("value", [1.0, np.float32(1.0), np.array([1.0, 2.5])], ids=repr)
def test_floor_division_and_divmod_give_pythons_types(value):
    tape = Tape()
    t = make_tracer(value, tape.leaf(), tape)
    for got, want in ((t // 0.7, value // 0.7), (2.0 // t, 2.0 // value), (divmod(t, 0.7)[0], divmod(value, 0.7)[0])):
        assert type(got) is type(want) and np.array_equal(got, want)
    assert np.array_equal(divmod(t, 0.7)[1].value, divmod(value, 0.7)[1])


@pytest.fixture
def in_place_always(monkeypatch):
    """Every VJP that writes into its own new array above a size does so at every size."""
    from adcli.engine.rules import elementwise as rules_elementwise

    monkeypatch.setattr(rules_elementwise, "_IN_PLACE_MIN", 0)  # the max/min reductions' too


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("kind,shape", SHAPES, ids=[f"{k}{s}" for k, s in SHAPES])
@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
def test_unary_ufunc_with_vjps_in_place(ufunc, kind, shape, dtype, in_place_always):
    test_unary_ufunc(ufunc, kind, shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("which", ["first", "second", "both"])
@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum, np.divide], ids=lambda u: u.__name__)
def test_binary_vjps_in_place(ufunc, which, dtype, in_place_always):
    for case in BIN_SHAPES:
        test_binary_ufunc(ufunc, case, which, dtype)


def test_reductions_to_one_entry_in_place(in_place_always):
    x = np.random.default_rng(4).standard_normal((3, 4))
    for f in (lambda x: weighted_sum(np.max(x, axis=1)), lambda x: weighted_sum(np.min(x, axis=0, keepdims=True))):
        check_grad(f, x)
        check_grad(f, x.astype(np.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_unary_vjps_written_in_place_keep_numpys_values_and_dtypes(dtype, in_place_always):
    # The VJPs write g * d into their own new array d when the result has d's shape and dtype;
    # every kind of cotangent must give exactly g * d, with NumPy's result dtype and shape.
    from adcli.engine.rules.elementwise import _over, _times

    x = np.linspace(-0.9, 0.9, 12).reshape(3, 4).astype(dtype)
    cotangents = [1.5, np.float64(1.5), np.float32(1.5), np.array(1.5, dtype), np.full((3, 4), 1.5, dtype),
                  np.broadcast_to(np.array(1.5, dtype), (3, 4)), np.ones(4, dtype) * 1.5, np.full((2, 3, 4), 1.5)]
    for g in cotangents:
        for op, ref in ((_times, lambda g, d: g * d), (_over, lambda g, d: g / d)):
            d = np.cos(x)
            want = ref(g, np.cos(x))
            got = op(g, d)
            assert got.dtype == want.dtype and got.shape == want.shape, (type(g), op)
            assert np.array_equal(got, want), (type(g), op)
        neg = _times(g, np.cos(x), negate=True)
        assert np.array_equal(neg, -g * np.cos(x)) and neg.dtype == (-g * np.cos(x)).dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("y", [2, 3, 0.5, -1.5, 2.0])
def test_power_vjp_of_a_number_exponent_written_in_place_keeps_numpys_values(dtype, y, in_place_always):
    # x ** y's VJP in x writes into the arrays it made: the same bits, dtype and shape as
    # NumPy's g * (y * x ** (y - 1)) for every kind of cotangent (float32 x with float64 g too).
    from adcli.engine.rules.elementwise import _pow_dx

    x = np.linspace(0.2, 1.9, 12).reshape(3, 4).astype(dtype)
    for g in [1.5, np.float32(1.5), np.array(1.5, dtype), np.linspace(-1.0, 1.0, 12).reshape(3, 4).astype(dtype),
              np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.ones(4, dtype) * 0.7, np.full((2, 3, 4), 1.5, dtype)]:
        want = g * (y * x) if y == 2 else g * (y * np.power(x, y - 1))
        got = _pow_dx(g, x**y, x, y)
        assert got.dtype == want.dtype and got.shape == want.shape, (type(g), np.shape(g))
        assert np.array_equal(got, want), (type(g), np.shape(g))
    ints = np.arange(1, 13).reshape(3, 4)  # an integer x: no writing a float into it
    assert np.array_equal(_pow_dx(np.ones((3, 4)), ints**3, ints, 3), 3 * ints**2.0)
