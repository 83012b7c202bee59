"""Native rules for reductions and scans: ufunc.reduce / ufunc.accumulate, sum, prod, max, min,
mean, cumsum, cumprod (axis: None, int or tuple; keepdims)."""

from __future__ import annotations

import math

import numpy as np

from ...errors import UnsupportedError
from ..core import Primitive, Tracer, apply, apply1, record_general
from ..library import library_rule
from ..lists import traced_list
from ..registry import ACCUMULATIONS, METHODS, REDUCTIONS, defnative, entry
from . import elementwise as rules_elementwise


def norm_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(int(a) % ndim if ndim else int(a) for a in axis)
    else:
        axes = (int(axis) % ndim if ndim else int(axis),)
    return tuple(sorted(axes))


ndarray = np.ndarray


def keep(g, x, axis, keepdims):
    """Give a reduced cotangent (or answer) back its reduced axes as length-1 dimensions."""
    g = np.asarray(g)
    if keepdims:
        return g
    shape = np.shape(x)
    if not shape:
        return g
    if type(axis) is int:  # the usual case, without norm_axes's tuple
        kept_shape = list(shape)
        kept_shape[axis % len(shape)] = 1
        return g.reshape(kept_shape)
    axes = norm_axes(axis, len(shape))
    return g.reshape([1 if i in axes else n for i, n in enumerate(shape)])


_SMALL = 4096  # elements: below this, a filled new array costs less than a broadcast view
_SHORT_LAST = 4  # a summed last axis this short is spread into a new array (see _spread)


def _spread(g, x, axis, keepdims):
    """A reduction's cotangent ``g`` spread back over ``x``'s shape: a new array for small ``x``
    (np.empty and a broadcasting assignment: cheaper there than a view's checks), a read-only
    broadcast view for large ones (no memory; np.broadcast_to's own checks are a fixed cost, which
    only small arrays notice)."""
    if type(x) is ndarray:  # the usual case, without np.shape's and np.size's Python calls
        shape, size = x.shape, x.size
    else:
        shape, size = np.shape(x), np.size(x)
    g = np.asarray(g) if axis is None and not keepdims else keep(g, x, axis, keepdims)
    if size <= _SMALL and g.dtype.kind in "fc":
        out = np.empty(shape, g.dtype)
        out[...] = g
        return out
    k = shape[-1] if shape else 0
    if 1 < k <= _SHORT_LAST and g.ndim == len(shape) and g.shape[-1] == 1 and g.size > 1 and g.dtype.kind in "fc":
        # the last axis summed, and short, and not every axis (np.sum(d ** 2, axis=-1) of pairwise
        # differences in 2-D or 3-D): a broadcast view would be stride 0 along it, and NumPy's
        # loops over such an operand go k elements at a time, several times slower; a new array,
        # one strided assignment per index, costs a little here and every consumer less
        # (docs/engine.md § Measurements behind the code)
        out = np.empty(shape, g.dtype)
        for j in range(k):
            out[..., j] = g[..., 0]
        return out
    return np.broadcast_to(g, shape)


def _count(x, axis):
    shape = np.shape(x)
    return math.prod(shape[a] for a in norm_axes(axis, len(shape)))  # Python ints: exact, ~10x cheaper than np.prod


# --- sums and means ---
SUM = Primitive(
    "numpy.add.reduce",
    lambda x, axis=None, keepdims=False: np.add.reduce(x, axis=axis, keepdims=keepdims),
    lambda g, ans, x, axis=None, keepdims=False: _spread(g, x, axis, keepdims),
    reads=False,  # x's shape only: the node keeps a stand-in (core.shape_only), not the summed array
    lean=True,  # a closed-form pullback costs about the forward: one pass over the data (mean, var, max, min too)
)
MEAN = Primitive(
    "numpy.mean",
    lambda x, axis=None, keepdims=False: np.mean(x, axis=axis, keepdims=keepdims),
    # divided before it is spread: a read-only broadcast view, like sum's, not a full-size array
    lambda g, ans, x, axis=None, keepdims=False: _spread(np.asarray(g) / _count(x, axis), x, axis, keepdims),
    reads=False,
    lean=True,
)


# --- max / min: the cotangent goes to the maximal entries, split evenly between ties ---

def _choose_vjp(g, ans, x, axis=None, keepdims=False):
    hit = x == keep(ans, x, axis, keepdims)
    g = keep(g, x, axis, keepdims)
    if type(x) is np.ndarray and x.dtype.kind == "f" and np.count_nonzero(hit) == np.size(ans):
        # one maximal entry each (no tie, no nan): the mask times g, in place when g has x's dtype
        mask = hit.astype(x.dtype)
        # (above the elementwise VJPs' size for writing in place: NumPy's out= has a fixed cost)
        if type(mask) is np.ndarray and mask.size > rules_elementwise._IN_PLACE_MIN and getattr(g, "dtype", x.dtype) == x.dtype:
            return np.multiply(mask, g, out=mask)
        return mask * g
    return np.where(hit, g / hit.sum(axis=norm_axes(axis, np.ndim(x)), keepdims=True), 0.0)


MAX = Primitive(
    "numpy.maximum.reduce",
    lambda x, axis=None, keepdims=False: np.maximum.reduce(x, axis=axis, keepdims=keepdims),
    _choose_vjp,
    lean=True,
)
MIN = Primitive(
    "numpy.minimum.reduce",
    lambda x, axis=None, keepdims=False: np.minimum.reduce(x, axis=axis, keepdims=keepdims),
    _choose_vjp,
    lean=True,
)


# --- products: d(prod x)/dx_i is the product of the others, computed without dividing so
# that zeros in x are exact (exclusive cumulative products from both ends) ---
def _to_last(x, axes):
    """Move ``axes`` to the end and flatten them into one; return the array and how to undo."""
    x = np.asarray(x)
    rest = [a for a in range(x.ndim) if a not in axes]
    perm = rest + list(axes)
    moved = np.transpose(x, perm)
    flat = moved.reshape(moved.shape[: len(rest)] + (-1,))
    return flat, moved.shape, np.argsort(perm)


def _prod_vjp(g, ans, x, axis=None, keepdims=False):
    ans_k = keep(ans, x, axis, keepdims)
    if type(x) is np.ndarray and x.dtype.kind == "f":
        # Every product a normal finite number means no x_i is zero, infinite or nan (a zero
        # makes its product 0 or nan, an inf or nan makes it inf or nan): the product of the
        # others is then ans / x_i, as exact (to an ulp) as the scans below and a fraction of
        # their cost. The checks read the products, not x.
        info = np.finfo(x.dtype)
        mag = np.abs(ans_k)
        if np.all((mag >= info.tiny) & (mag <= info.max)):
            g_k = keep(g, x, axis, keepdims)
            with np.errstate(over="ignore", under="ignore"):
                scaled = g_k * ans_k  # of the reduced size
                sm = np.abs(scaled)
            if np.all(((sm >= info.tiny) | (g_k == 0)) & (sm <= info.max)):
                return np.divide(scaled, x)  # (g * ans) / x: one pass over x, not two
            return g_k * (ans_k / x)  # g * ans over- or underflows: scale after dividing
    axes = norm_axes(axis, np.ndim(x))
    flat, moved_shape, inverse = _to_last(x, axes)
    ones = np.ones(flat.shape[:-1] + (1,), flat.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (left * right).reshape(moved_shape).transpose(inverse)
    return keep(g, x, axis, keepdims) * others


PROD = Primitive(
    "numpy.multiply.reduce",
    lambda x, axis=None, keepdims=False: np.multiply.reduce(x, axis=axis, keepdims=keepdims),
    _prod_vjp,
)


# --- scans ---
def _rev_cumsum(g, axis):
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


CUMSUM = Primitive(
    "numpy.add.accumulate",
    lambda x, axis=0: np.add.accumulate(x, axis=axis),
    lambda g, ans, x, axis=0: _rev_cumsum(g, axis),
)


def _cumprod_vjp(g, ans, x, axis=0):
    # grad_i = sum_{j>=i} g_j * ans_j / x_i when x has no zeros; otherwise run the exact
    # recurrence s_i = g_i + x_{i+1} s_{i+1}, grad_i = s_i * prod_{k<i} x_k.
    if np.all(x != 0):
        return _rev_cumsum(g * ans, axis) / x
    gm, xm = np.moveaxis(g, axis, 0), np.moveaxis(x, axis, 0)
    n = xm.shape[0]
    s = np.zeros_like(gm, dtype=np.result_type(g, x))
    s[n - 1] = gm[n - 1]
    for i in range(n - 2, -1, -1):
        s[i] = gm[i] + xm[i + 1] * s[i + 1]
    before = np.concatenate([np.ones_like(xm[:1]), np.cumprod(xm[:-1], axis=0)], axis=0)
    return np.moveaxis(s * before, 0, axis)


CUMPROD = Primitive(
    "numpy.multiply.accumulate",
    lambda x, axis=0: np.multiply.accumulate(x, axis=axis),
    _cumprod_vjp,
)

REDUCTIONS.update({np.add: SUM, np.multiply: PROD, np.maximum: MAX, np.minimum: MIN, np.fmax: MAX, np.fmin: MIN})
ACCUMULATIONS.update({np.add: CUMSUM, np.multiply: CUMPROD})


def reduce_call(prim, name, x, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """Shared front for np.sum / x.sum() / np.add.reduce(...) and the other reductions."""
    if out is not None:
        raise UnsupportedError(f"{name}(..., out=...) on a traced value: write y = {name}(...) instead")
    if where is not True:
        raise UnsupportedError(f"{name}(..., where=...) on a traced value: multiply by the mask or use np.where first")
    if dtype is not None and isinstance(x, Tracer):
        x = x.astype(dtype)
    kwargs = {"axis": _hashable(axis), "keepdims": bool(keepdims)}
    if isinstance(x, Tracer):  # the usual call: apply's search for the traced arguments, inline
        xv = x.value
        ans = record_general(prim, x.tape, ((0, x.idx),), prim.fwd(xv, **kwargs), (x,), [xv], kwargs)
    else:
        ans = apply(prim, x, **kwargs)
    if initial is not np._NoValue:
        if prim is SUM:
            ans = ans + initial
        else:
            raise UnsupportedError(f"{name}(..., initial=...) on a traced value is not supported")
    return ans


METHODS["reduce"] = reduce_call


def _hashable(axis):
    return tuple(axis) if isinstance(axis, list) else axis


@defnative(np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce_call(SUM, "np.sum", a, axis, dtype, out, keepdims, initial, where)


@defnative(np.prod)
def _prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce_call(PROD, "np.prod", a, axis, dtype, out, keepdims, initial, where)


@defnative(np.max, np.amax)
def _max(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce_call(MAX, "np.max", a, axis, None, out, keepdims, initial, where)


@defnative(np.min, np.amin)
def _min(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce_call(MIN, "np.min", a, axis, None, out, keepdims, initial, where)


@defnative(np.mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    return reduce_call(MEAN, "np.mean", a, axis, dtype, out, keepdims, np._NoValue, where)


def _scan(prim, name, a, axis, dtype, out):
    if out is not None:
        raise UnsupportedError(f"{name}(..., out=...) on a traced value: write y = {name}(...) instead")
    if dtype is not None:
        a = a.astype(dtype)
    if axis is None:
        a, axis = np.ravel(a), 0
    return apply(prim, a, axis=int(axis) % max(np.ndim(a.value if isinstance(a, Tracer) else a), 1))


@defnative(np.cumsum, np.cumulative_sum)
def _cumsum(a, axis=None, dtype=None, out=None, **kwargs):
    if kwargs.get("include_initial"):
        raise UnsupportedError("np.cumulative_sum(..., include_initial=True) on a traced value is not supported")
    return _scan(CUMSUM, "np.cumsum", a, axis, dtype, out)


@defnative(np.cumprod, np.cumulative_prod)
def _cumprod(a, axis=None, dtype=None, out=None, **kwargs):
    if kwargs.get("include_initial"):
        raise UnsupportedError("np.cumulative_prod(..., include_initial=True) on a traced value is not supported")
    return _scan(CUMPROD, "np.cumprod", a, axis, dtype, out)


# --- np.var, np.std: a native rule the advisor advised (origin="advised"; docs/advisor.md § Engine defaults) ---
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
                                                                                   keepdims=keepdims), _var_vjp,
                lean=True)


@defnative(np.var, origin="advised")
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


@defnative(np.std, origin="advised")
def _std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    if out is not None:
        return entry(np.std).derivation((a,), {"axis": axis, "dtype": dtype, "out": out, "ddof": ddof,
                                               "keepdims": keepdims} | kwargs)
    v = np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kwargs)
    return apply1(STD_SQRT, v) if isinstance(v, Tracer) else np.sqrt(v)


# --- NumPy functions given lists of traced values --------------------------------------------


def _relist(func):
    def rule(*args, **kwargs):
        return func(*[traced_list(a) for a in args], **{k: traced_list(v) for k, v in kwargs.items()})

    return rule


# The function bodies whose first arguments accept array-likes, by their public functions
# (each is one attribute write per gradient: the ones ported programs call with lists).
_RELISTED = {
    "numpy._core.fromnumeric": (np.sum, np.mean, np.std, np.var, np.max, np.min, np.prod),
    "numpy.linalg._linalg": (np.linalg.norm,),
    "numpy.lib._function_base_impl": (np.append,),
}
for _module, _funcs in _RELISTED.items():
    for _func in _funcs:
        library_rule(f"{_module}.{_func.__name__}._implementation",
                     shown=f"{_module.split('.')[0]}.{_func.__name__}_of_lists")(_relist(_func))
