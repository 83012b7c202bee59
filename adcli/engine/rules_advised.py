"""Native rules the advisor advised: the library tier of ``adcli suggest --tier library`` over
every profiles/ workload and the corpus (docs/advisor.md § Engine defaults records the runs). Each was derived
before, at 10-37x its primal, and called often enough in one workload to be worth a rule.

They are written here as native rules rather than shipped as autograd imports: an import is
verified when it loads, and the first one costs ~0.6 s (autograd's catalog), which every process
taking a gradient would pay; a native rule costs nothing to load and its pullback is one NumPy
call (numpy.roll's import costs 41 µs per call in the stencil workload, a minimal rule 24 µs).
Calls these rules do not cover (``where=``, ``out=``, ``dtype=``, 1-d ``triu``) keep their
verified derivation.
"""

from __future__ import annotations

import math

import numpy as np

from .core import Primitive, Tracer, apply, apply1
from .registry import defnative, entry
from .rules_shape import _concatenate


def _neg(shift):
    return tuple(-int(s) for s in shift) if isinstance(shift, (tuple, list)) else np.negative(shift)


def _roll(x, shift, axis):
    """np.roll(x, shift, axis), for one integer shift along one axis of an array done as NumPy
    does it (np.empty_like and two slice copies: the same values and layout) without its
    argument handling, which costs several times the copies on small arrays (a 48x48 stencil's
    400 rolls per step took 7 µs each, 2 µs this way)."""
    if (type(x) is np.ndarray and type(axis) is int and isinstance(shift, (int, np.integer))
            and -x.ndim <= axis < x.ndim):
        axis %= x.ndim
        off = int(shift) % (x.shape[axis] or 1)
        out = np.empty_like(x)
        if off == 0:
            out[...] = x
            return out
        lead = (slice(None),) * axis
        out[lead + (slice(off, None),)] = x[lead + (slice(None, -off),)]
        out[lead + (slice(None, off),)] = x[lead + (slice(-off, None),)]
        return out
    return np.roll(x, shift, axis)


ROLL = Primitive(
    "numpy.roll",
    lambda x, shift, axis=None: _roll(x, shift, axis),
    lambda g, ans, x, shift, axis=None: _roll(np.asarray(g), _neg(shift), axis),
    None,
    reads=False,
)


@defnative(np.roll)
def _native_roll(a, shift, axis=None):
    if isinstance(shift, Tracer) or isinstance(axis, Tracer) or np.ndim(a.value if isinstance(a, Tracer) else a) == 0:
        return entry(np.roll).derivation((a, shift), {"axis": axis})
    return apply(ROLL, a, shift, axis=axis)


TRIU = Primitive("numpy.triu", lambda x, k=0: np.triu(x, k), lambda g, ans, x, k=0: np.triu(g, k), None, reads=False)
TRIL = Primitive("numpy.tril", lambda x, k=0: np.tril(x, k), lambda g, ans, x, k=0: np.tril(g, k), None, reads=False)


def _triangle(prim, func):
    def native(m, k=0):
        if np.ndim(m.value if isinstance(m, Tracer) else m) < 2 or isinstance(k, Tracer):
            return entry(func).derivation((m, k), {})  # a 1-d input broadcasts to 2-d: derived
        return apply(prim, m, int(k))
    return native


defnative(np.triu)(_triangle(TRIU, np.triu))
defnative(np.tril)(_triangle(TRIL, np.tril))


def _outer_a(g, ans, a, b):
    return (np.asarray(g) @ np.ravel(b)).reshape(np.shape(a))


def _outer_b(g, ans, a, b):
    return (np.ravel(a) @ np.asarray(g)).reshape(np.shape(b))


OUTER = Primitive("numpy.outer", lambda a, b: np.outer(a, b), _outer_a, _outer_b)


@defnative(np.outer)
def _outer(a, b, out=None):
    if out is not None:
        return entry(np.outer).derivation((a, b), {"out": out})
    return apply(OUTER, a, b)


def _axes(ndim: int, axis) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    return tuple(int(i) % max(ndim, 1) for i in (axis if isinstance(axis, (tuple, list)) else (axis,)))


def _var_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    x = np.asarray(x)
    axes = _axes(x.ndim, axis)
    n = math.prod(x.shape[i] for i in axes)
    g = np.asarray(g)
    if not keepdims:
        g = np.expand_dims(g, axes) if axes else g
    if n - ddof <= 0:
        return np.full_like(x, np.nan) * g
    if x.dtype.type in (np.float64, np.float32):  # np.mean's own steps, without its argument handling
        mean = np.add.reduce(x, axis=axes, keepdims=True) / n
    else:
        mean = np.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    if centred.dtype == np.result_type(centred, g) and centred.shape == np.broadcast_shapes(centred.shape, g.shape):
        centred *= (2.0 / (n - ddof)) * g  # the scaled cotangent is the reduced shape: one pass, in place
        return centred
    return (2.0 / (n - ddof)) * g * centred


VAR = Primitive("numpy.var", lambda x, axis=None, ddof=0, keepdims=False: np.var(x, axis=axis, ddof=ddof,
                                                                                   keepdims=keepdims), _var_vjp)


@defnative(np.var)
def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    value = a.value if isinstance(a, Tracer) else a
    if (dtype is not None or out is not None or kwargs or isinstance(ddof, Tracer)
            or np.result_type(value).kind != "f"):
        return entry(np.var).derivation((a,), {k: v for k, v in (("axis", axis), ("dtype", dtype), ("out", out),
                                                                    ("ddof", ddof), ("keepdims", keepdims))
                                               if v is not None} | kwargs)
    axis = tuple(axis) if isinstance(axis, list) else axis
    return apply(VAR, a, axis=axis, ddof=ddof, keepdims=bool(keepdims))


# np.std = sqrt(var), with the square root's derivative taken as 0 where the deviation is 0: there
# std is identically 0 (one element, or ddof leaving one) or at its minimum (all values equal),
# where 0 is a valid subgradient; the chain rule through sqrt would give 0 * inf = nan.
STD_SQRT = Primitive("numpy.std", np.sqrt,
                     lambda g, ans, v: g * np.where(ans > 0, 0.5 / np.where(ans > 0, ans, 1.0), 0.0))


@defnative(np.std)
def _std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    if out is not None:
        return entry(np.std).derivation((a,), {"axis": axis, "dtype": dtype, "out": out, "ddof": ddof,
                                               "keepdims": keepdims} | kwargs)
    v = np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kwargs)
    return apply1(STD_SQRT, v) if isinstance(v, Tracer) else np.sqrt(v)


# np.hstack and np.vstack: one concatenate node (rules_shape) instead of the derivation's
# atleast_1d/atleast_2d of each array, then concatenate. The corpus's rnn calls np.hstack 61
# times per gradient, 21 µs more per call derived than np.concatenate (docs/advisor.md § Engine
# defaults). Arrays of too few dimensions for the join's axis, and dtype=/casting=, keep the
# derivation.
_HSTACK, _VSTACK = np.hstack, np.vstack  # NumPy's own (engine.lists puts wrappers in np's namespace while recording)


@defnative(_HSTACK)
def _hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = list(tup)
    ndims = {np.ndim(a.value if isinstance(a, Tracer) else a) for a in arrays}
    if not arrays or 0 in ndims or dtype is not None or casting != "same_kind":
        return entry(_HSTACK).derivation((tup,), {"dtype": dtype, "casting": casting})
    return _join(arrays, 0 if np.ndim(arrays[0].value if isinstance(arrays[0], Tracer) else arrays[0]) == 1 else 1)


@defnative(_VSTACK)
def _vstack(tup, *, dtype=None, casting="same_kind"):
    arrays = list(tup)
    if not arrays or min(np.ndim(a.value if isinstance(a, Tracer) else a) for a in arrays) < 2 \
            or dtype is not None or casting != "same_kind":
        return entry(_VSTACK).derivation((tup,), {"dtype": dtype, "casting": casting})
    return _join(arrays, 0)


def _join(arrays: list, axis: int):
    return _concatenate(arrays, axis=axis)
