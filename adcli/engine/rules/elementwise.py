"""Native rules for NumPy's elementwise ufuncs: a table of derivatives.

Each entry reads ``ufunc: vjp for each argument``, a VJP being ``(g, ans, x[, y]) -> cotangent``
before un-broadcasting (the engine sums a cotangent back to its argument's shape).
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Primitive, passes, record_result, unwrap
from ..keep import shape_read
from ..registry import NONDIFF, OPERATORS, defnative, defufunc_rule

LN2 = np.log(2.0)
LN10 = np.log(10.0)

def defufunc(ufunc, *vjps, fwd=None, reads=True, joint=None) -> Primitive:
    """Register the rule for ``ufunc``; with ``fwd`` (a Python operator), also return a twin
    primitive for the operator dunders, whose forward is that operator. ``reads=False``: the
    VJPs use only the arguments' shapes, not their values. ``joint``: see Primitive."""
    prim = Primitive(f"numpy.{ufunc.__name__}", ufunc, *vjps, reads=reads, joint=joint)
    defufunc_rule(ufunc, prim)
    if fwd is None:
        return prim
    OPERATORS[fwd] = twin = Primitive(prim.name, fwd, *vjps, reads=reads, joint=joint)
    return twin


# A unary VJP's derivative array is new (np.cos(x), 1 - ans * ans): for a large one, the product
# or quotient with g is written into it, which saves an array of the input's size (memory, and the
# first-touch page faults of a fresh one, which cost several times the product itself). For 4096
# elements or fewer (_IN_PLACE_MIN) a new array costs less than NumPy's out=: the threshold trades
# the array saved against out='s fixed cost (docs/engine.md § Measurements behind the code). IEEE
# products and sums commute exactly, so the values are those of g * d.
_IN_PLACE_MIN = 4096
ndarray = np.ndarray


def _big(x) -> bool:
    """Whether a unary VJP's derivative array (x's shape) is large enough to be written in place."""
    return type(x) is ndarray and x.size > _IN_PLACE_MIN


def _into(d, g) -> bool:
    """Whether ``g * d`` has ``d``'s shape and dtype, so that it can be written into ``d``."""
    tg = type(g)
    if tg is ndarray:
        return g.dtype == d.dtype and (g.shape == d.shape or g.ndim == 0)
    if tg is float:  # a Python float is weak: g * d keeps d's dtype
        return d.dtype.kind in "fc"
    return tg is np.float64 and d.dtype == np.float64


def _times(g, d, negate=False):
    """``g * d`` (``-g * d`` with ``negate``) for a ``d`` this VJP made."""
    if type(d) is ndarray and d.size > _IN_PLACE_MIN and _into(d, g):
        np.multiply(d, g, out=d)
        return np.negative(d, out=d) if negate else d
    return -g * d if negate else g * d


def _over(g, d):
    """``g / d`` for a ``d`` this VJP made."""
    if type(d) is ndarray and d.size > _IN_PLACE_MIN and _into(d, g):
        return np.divide(g, d, out=d)
    return g / d


def _one_minus_square(v):
    """``1 - v * v``, in place in the square when it is an array."""
    d = v * v
    return np.subtract(1.0, d, out=d) if type(d) is ndarray and d.dtype.kind in "fc" else 1.0 - d


def _one_plus_square(v):
    d = v * v
    return np.add(d, 1.0, out=d) if type(d) is ndarray and d.dtype.kind in "fc" else 1.0 + d


# nextafter(x, y) is x moved by one ulp: its derivative is 1 in x (0 in y), not 0
NEXTAFTER = defufunc(np.nextafter, lambda g, ans, x, y: g, lambda g, ans, x, y: np.zeros_like(g), reads=False)


def _tie_split(g, ans, x, y, mine):
    # maximum/minimum and friends: the chosen argument gets g; an exact tie splits it evenly.
    chosen = mine == ans
    if type(g) is np.ndarray and g.dtype.kind == "f" and chosen.shape == g.shape and not np.equal(x, y).any():
        return _mask_times(chosen, g)  # no tie (the usual case)
    return g * np.where(x == y, 0.5, chosen)


def _mask_times(chosen, g):
    """``g * chosen`` for a boolean mask of g's shape: the mask as g's dtype times g, ~half the
    cost of NumPy's mixed bool-float multiply and of the tie-splitting where()."""
    mask = chosen.astype(g.dtype)
    return np.multiply(mask, g, out=mask) if type(mask) is ndarray and mask.size > _IN_PLACE_MIN else mask * g


def _tie_split_both(g, ans, x, y):
    """Both arguments' shares when both are traced: each one's mask once, and the tie check
    from the two masks (x and y both equal to the answer: x == y, never for a nan) rather than
    a third comparison. The same values as _tie_split for each argument."""
    cx, cy = x == ans, y == ans
    if type(g) is np.ndarray and g.dtype.kind == "f" and cx.shape == g.shape == cy.shape and \
            not np.logical_and(cx, cy).any():
        return _mask_times(cx, g), _mask_times(cy, g)
    tie = x == y  # _tie_split's splitting path, with the masks made above
    return g * np.where(tie, 0.5, cx), g * np.where(tie, 0.5, cy)


def _pow_dx(g, ans, x, y):
    # y * x**(y-1), with the exponent kept at 1 where y == 0 so that 0 * 0**-1 is 0, not nan.
    if type(y) in (int, float):  # x ** 2, x ** 0.5: no array work for the exponent
        if y == 0:
            return g * np.zeros_like(x)
        if y == 2:
            return _times(g, y * x)  # one array made, not two (x ** 2 in a kernel: making the second
            # cost many times the product when the allocator gave it back to the system each call;
            # docs/engine.md § Measurements behind the code)
        d = np.power(x, y - 1)
        return _times(g, np.multiply(d, y, out=d) if _big(d) and d.dtype.kind in "fc" else y * d)
    return g * y * np.power(x, np.where(y == 0, 1.0, y - 1))


def _pow_dy(g, ans, x, y):
    # d(x**y)/dy = x**y log x; at x == 0 the limit is 0 for y > 0, and log would give nan.
    safe = np.where(x == 0, 1.0, x)
    return g * np.where(x == 0, 0.0, ans * np.log(safe))


def _mul_vjp(g, other, target):
    """``g * other`` summed down to ``target``'s shape. When ``target`` was broadcast (kron's
    expand_dims operands, outer products), one einsum contraction replaces the full-size
    product and the sum that would follow it: no temporary of the output's size."""
    if type(target) is not np.ndarray or type(g) is not np.ndarray or type(other) is not np.ndarray:
        return g * other
    tshape, oshape, gshape = target.shape, other.shape, g.shape
    if tshape == gshape or g.ndim < 2 or g.dtype != other.dtype:
        return g * other
    nd = g.ndim
    tlead, olead = nd - len(tshape), nd - len(oshape)
    keep = [i for i in range(nd) if i >= tlead and tshape[i - tlead] == gshape[i]]
    olabels = [i for i in range(nd) if i >= olead and oshape[i - olead] == gshape[i]]
    other = other.reshape([gshape[i] for i in olabels])  # drop other's broadcast axes
    out = np.einsum(g, list(range(nd)), other, olabels, keep, optimize=False)
    return out.reshape(tshape)


def _div_dy(g, ans, x, y):
    """d(x / y)/dy = -g * ans / y. For a scalar or broadcast y, g * ans is summed over y's
    broadcast axes first (y is constant along them) and divided by -y, which then costs
    nothing: one pass over the output instead of three. (An unsigned y cannot be negated.)"""
    if type(y) is float:
        return g * ans / -y
    if type(y) is np.ndarray and y.dtype.kind == "f" and y.shape != np.shape(g):
        return _mul_vjp(g, ans, y) / -y
    t = g * ans
    if type(t) is ndarray and t.size > _IN_PLACE_MIN and type(y) is ndarray and y.dtype == t.dtype and y.shape == t.shape:
        # one new array, divided and negated in place: -(g * ans / y) is (-g * ans) / y to the bit
        np.divide(t, y, out=t)
        return np.negative(t, out=t)
    return -t / y


def _sign(x):
    return np.sign(x)


# --- arithmetic ---
# The operators (x + y) run Python's operator, as the primal does: the same result for arrays,
# and for scalars (the x[i] loops) NumPy's scalar math is ~15x faster than a ufunc call.
# Explicit ufunc calls (np.add(x, y)) keep the ufunc's own semantics (e.g. 1.0 / 0.0 = inf).
ADD = defufunc(np.add, passes, passes, fwd=operator.add, reads=False)
SUBTRACT = defufunc(np.subtract, passes, lambda g, ans, x, y: -g, fwd=operator.sub, reads=False)
# each VJP reads the other argument, and its own for its shape only (_mul_vjp's target): a node
# keeps y for x's cotangent and x for y's, not both (4.0 * u keeps 4.0, not u)
MULTIPLY = defufunc(np.multiply, shape_read("x")(lambda g, ans, x, y: _mul_vjp(g, y, x)),
                    shape_read("y")(lambda g, ans, x, y: _mul_vjp(g, x, y)), fwd=operator.mul)
DIVIDE = defufunc(np.true_divide, lambda g, ans, x, y: g / y, _div_dy, fwd=operator.truediv)
NEGATIVE = defufunc(np.negative, lambda g, ans, x: -g, fwd=operator.neg)
POSITIVE = defufunc(np.positive, lambda g, ans, x: g, fwd=operator.pos)
POWER = defufunc(np.power, _pow_dx, _pow_dy, fwd=operator.pow)
FLOAT_POWER = defufunc(np.float_power, _pow_dx, _pow_dy)
REMAINDER = defufunc(np.remainder, lambda g, ans, x, y: g, lambda g, ans, x, y: -g * np.floor_divide(x, y),
                     fwd=operator.mod)
defufunc(np.fmod, lambda g, ans, x, y: g, lambda g, ans, x, y: -g * np.trunc(x / y))
defufunc(np.square, lambda g, ans, x: 2.0 * g * x)
defufunc(np.sqrt, lambda g, ans, x: _over(g, 2.0 * ans) if _big(ans) else g / (2.0 * ans))
defufunc(np.cbrt, lambda g, ans, x: g / (3.0 * ans * ans))
defufunc(np.reciprocal, lambda g, ans, x: -g * ans * ans)
ABSOLUTE = defufunc(np.absolute, lambda g, ans, x: _times(g, _sign(x)) if _big(x) else g * _sign(x), fwd=operator.abs)
defufunc(np.fabs, lambda g, ans, x: _times(g, _sign(x)) if _big(x) else g * _sign(x))
defufunc(np.copysign, lambda g, ans, x, y: g * np.where(np.signbit(x) == np.signbit(y), 1.0, -1.0), None)
defufunc(np.ldexp, lambda g, ans, x, y: g * np.ldexp(1.0, y), None)
# heaviside(x, h) is 0, h or 1: flat in x wherever it has a derivative, and h itself where x == 0
defufunc(np.heaviside, None, lambda g, ans, x, h: g * (x == 0))
defufunc(np.conjugate, lambda g, ans, x: g)

# --- exponentials and logarithms ---
defufunc(np.exp, lambda g, ans, x: g * ans)
defufunc(np.exp2, lambda g, ans, x: g * ans * LN2)
defufunc(np.expm1, lambda g, ans, x: _times(g, ans + 1.0) if _big(ans) else g * (ans + 1.0))
defufunc(np.log, lambda g, ans, x: g / x)
defufunc(np.log2, lambda g, ans, x: g / (x * LN2))
defufunc(np.log10, lambda g, ans, x: g / (x * LN10))
defufunc(np.log1p, lambda g, ans, x: _over(g, x + 1.0) if _big(x) else g / (x + 1.0))
defufunc(np.logaddexp, lambda g, ans, x, y: g * np.exp(x - ans), lambda g, ans, x, y: g * np.exp(y - ans))
defufunc(np.logaddexp2, lambda g, ans, x, y: g * np.exp2(x - ans), lambda g, ans, x, y: g * np.exp2(y - ans))

# --- trigonometric and hyperbolic ---
defufunc(np.sin, lambda g, ans, x: _times(g, np.cos(x)) if _big(x) else g * np.cos(x))
defufunc(np.cos, lambda g, ans, x: _times(g, np.sin(x), negate=True) if _big(x) else -g * np.sin(x))
defufunc(np.tan, lambda g, ans, x: _times(g, _one_plus_square(ans)) if _big(ans) else g * (1.0 + ans * ans))
defufunc(np.arcsin, lambda g, ans, x: _over(g, np.sqrt(_one_minus_square(x))) if _big(x) else g / np.sqrt(1.0 - x * x))
defufunc(np.arccos, lambda g, ans, x: -g / np.sqrt(1.0 - x * x))
defufunc(np.arctan, lambda g, ans, x: _over(g, _one_plus_square(x)) if _big(x) else g / (1.0 + x * x))
defufunc(np.sinh, lambda g, ans, x: _times(g, np.cosh(x)) if _big(x) else g * np.cosh(x))
defufunc(np.cosh, lambda g, ans, x: _times(g, np.sinh(x)) if _big(x) else g * np.sinh(x))
defufunc(np.tanh, lambda g, ans, x: _times(g, _one_minus_square(ans)) if _big(ans) else g * (1.0 - ans * ans))
defufunc(np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1.0))
defufunc(np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1.0))
defufunc(np.arctanh, lambda g, ans, x: _over(g, _one_minus_square(x)) if _big(x) else g / (1.0 - x * x))
defufunc(np.arctan2, lambda g, ans, y, x: g * x / (x * x + y * y), lambda g, ans, y, x: -g * y / (x * x + y * y))
defufunc(np.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans)
defufunc(np.deg2rad, lambda g, ans, x: g * (np.pi / 180.0))
defufunc(np.rad2deg, lambda g, ans, x: g * (180.0 / np.pi))

# --- selection: the chosen argument gets the cotangent, ties split it ---
def _select(ufunc):
    return defufunc(ufunc, lambda g, ans, x, y: _tie_split(g, ans, x, y, x),
                    lambda g, ans, x, y: _tie_split(g, ans, x, y, y), joint=_tie_split_both)


MAXIMUM, MINIMUM = _select(np.maximum), _select(np.minimum)
_select(np.fmax)
_select(np.fmin)

# Aliases NumPy exposes under other names are the same ufunc objects (np.divide is
# np.true_divide, np.abs is np.absolute, np.degrees/np.radians differ: register them too).
defufunc(np.degrees, lambda g, ans, x: g * (180.0 / np.pi))
defufunc(np.radians, lambda g, ans, x: g * (np.pi / 180.0))

def nondiff(fn):
    """Wrap a NumPy callable whose outputs carry no gradient (comparisons, floor, argmax...):
    it runs on the unwrapped values and returns plain results, which is exact because the
    derivative is zero wherever it exists."""

    def run(*args, **kwargs):
        return fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})

    run.__name__ = getattr(fn, "__name__", "nondiff")
    run.__adcli_nondiff__ = True
    return run


# Ufuncs whose outputs carry no gradient (zero derivative wherever one exists): they run on
# plain values and return plain results.
NONDIFF_UFUNCS = frozenset({
    np.sign, np.floor, np.ceil, np.trunc, np.rint, np.floor_divide, np.spacing,
    np.signbit, np.isnan, np.isinf, np.isfinite, np.isnat,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift,
    np.gcd, np.lcm,
})
NONDIFF.update((ufunc, nondiff(ufunc)) for ufunc in NONDIFF_UFUNCS)


# --- real, imag, angle, real_if_close of real values; nan_to_num ---
@defnative(np.real)
def _real(val):
    return val.real  # a real array's .real is the array itself (a view)


@defnative(np.real_if_close)
def _real_if_close(a, tol=100):
    return a  # real already: NumPy returns it unchanged


# of real values: zeros, and 0 or pi (piecewise constant): plain results, no gradient
defnative(np.imag)(nondiff(np.imag))
defnative(np.angle)(nondiff(np.angle))


def _nan_to_num_vjp(g, ans, x):
    return np.where(np.isfinite(x), g, 0.0)


_NAN_TO_NUM = Primitive("numpy.nan_to_num", None, _nan_to_num_vjp)


@defnative(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if copy is False:
        raise TypeError("np.nan_to_num(copy=False) of a traced value: write y = np.nan_to_num(x)")
    ans = np.nan_to_num(x.value, copy=True, nan=nan, posinf=posinf, neginf=neginf)
    return record_result(_NAN_TO_NUM, ans, (x,), {})
