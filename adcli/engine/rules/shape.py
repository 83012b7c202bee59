"""Native rules for shape, indexing and selection: reshape, transpose, concatenate, getitem,
where, clip, sort, ... (assignment lives in engine.mutation)."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from .. import hooks
from ..core import Primitive, Tracer, apply, node_kind, record
from ..keep import shape_read
from ..kernels import roll as roll_kernel
from ..mutation import viewing
from ..registry import METHODS, defnative, entry
from ..sums import sum_to_shape, unbroadcast
from ..tape import parent_at
from .elementwise import nondiff

ndarray = np.ndarray


def _val(x):
    return x.value if isinstance(x, Tracer) else x


# --- reshapes and axis permutations (the cotangent is reshaped / permuted back) ---
# Each has its own node kind rather than a Primitive's general node: they are the most frequent
# view-making calls in derived code (np.squeeze, np.expand_dims, x.T, keepdims helpers), and the
# general path's argument handling costs more per call than the NumPy call itself (docs/engine.md
# § Measurements behind the code).
BROADCAST_TO = Primitive(
    "numpy.broadcast_to",
    lambda x, shape: np.broadcast_to(x, shape),
    lambda g, ans, x, shape: sum_to_shape(np.asarray(g), np.shape(x)),
)
COPY = Primitive("numpy.copy", lambda x, order="K": np.array(x, copy=True, order=order), lambda g, ans, x, order="K": g)
ASTYPE = Primitive(
    "numpy.ndarray.astype",
    lambda x, dtype: np.asarray(x).astype(dtype) if np.ndim(x) else np.dtype(dtype).type(x),
    lambda g, ans, x, dtype: np.asarray(g).astype(getattr(x, "dtype", np.float64)) if np.ndim(x) else g,
)


@node_kind(output=4, parents=parent_at(1))
def _pb_reshape(node, g, acc):
    _, p, shape, order, _made = node
    acc.add(p, g.reshape(shape, order=order) if type(g) is ndarray else np.reshape(g, shape, order=order))


@node_kind(output=4, parents=parent_at(1))
def _pb_transpose(node, g, acc):
    _, p, inverse, _, _made = node
    acc.add(p, g.transpose(inverse) if type(g) is ndarray else np.transpose(g, inverse))


def _made(ans):
    """What a shape node keeps of its output: for a profiler only, which counts a copy (reshape
    of a non-contiguous array) as an allocation and a view as none."""
    return ans if hooks._session is not None else None


def reshape(x, shape, order="C"):
    if order not in ("C", "F"):
        raise UnsupportedError(f"reshape(..., order={order!r}) on a traced value: use 'C' or 'F'")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    xv = x.value
    ans = xv.reshape(shape, order=order) if type(xv) is ndarray else np.reshape(xv, shape, order=order)
    t = record(x.tape, (_pb_reshape, x.idx, np.shape(xv), order, _made(ans)), ans)
    return viewing(x, t, lambda r: reshape(r, shape, order))


def transpose(x, axes=None):
    xv = x.value
    nd = np.ndim(xv)
    if axes is not None:
        axes = tuple(int(a) % nd for a in axes)
    ans = xv.transpose(axes) if type(xv) is ndarray else np.transpose(xv, axes)
    inverse = None if axes is None else tuple(sorted(range(len(axes)), key=axes.__getitem__))
    t = record(x.tape, (_pb_transpose, x.idx, inverse, None, _made(ans)), ans)
    return viewing(x, t, lambda r: transpose(r, axes))


@defnative(np.reshape)
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    shape = newshape if shape is None else shape
    out = reshape(a, shape, order)
    return out.copy() if copy else out


@defnative(np.transpose, np.permute_dims)
def _transpose(a, axes=None):
    return transpose(a, axes)


@defnative(np.matrix_transpose)
def _matrix_transpose(x):
    nd = np.ndim(x.value)
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


@defnative(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    perm = list(range(np.ndim(a.value)))
    i, j = int(axis1) % len(perm), int(axis2) % len(perm)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, tuple(perm))


@defnative(np.moveaxis)
def _moveaxis(a, source, destination):
    nd = np.ndim(a.value)
    src = [int(s) % nd for s in np.atleast_1d(source)]
    dst = [int(d) % nd for d in np.atleast_1d(destination)]
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, tuple(order))


@defnative(np.squeeze)
def _squeeze(a, axis=None):
    shape = np.shape(a.value)
    if axis is None:
        new = tuple(n for n in shape if n != 1)
    else:
        given = (axis,) if isinstance(axis, (int, np.integer)) else axis if isinstance(axis, (tuple, list)) \
            else np.atleast_1d(axis)
        axes = {int(ax) % len(shape) for ax in given}
        if any(shape[ax] != 1 for ax in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        new = tuple(n for i, n in enumerate(shape) if i not in axes)
    return reshape(a, new)


@defnative(np.expand_dims)
def _expand_dims(a, axis):
    shape = list(np.shape(a.value))
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = sorted(int(ax) % (len(shape) + len(axis)) for ax in axis)
    for ax in axes:
        shape.insert(ax, 1)
    return reshape(a, tuple(shape))


RAVEL = Primitive(
    "numpy.ravel",
    lambda x, order="C": np.ravel(x, order),
    lambda g, ans, x, order="C": np.reshape(g, np.shape(x), order="F" if order == "F" else "C"),
)


@defnative(np.ravel)
def _ravel(a, order="C"):
    # np.ravel itself, not reshape(-1): for a reversed array NumPy's ravel copies where reshape
    # would return a negative-stride view
    if order not in ("C", "F"):
        raise UnsupportedError(f"ravel(..., order={order!r}) on a traced value: use 'C' or 'F'")
    return viewing(a, apply(RAVEL, a, order=order), lambda r: _ravel(r, order))


@defnative(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return viewing(array, apply(BROADCAST_TO, array, shape), lambda r: _broadcast_to(r, shape))


@defnative(np.copy)
def _copy(a, order="K", subok=False):
    return apply(COPY, a, order=order)


def copy_method(x, order="C"):
    """``x.copy()``: unlike np.copy (order "K"), the method makes a C-ordered copy by default."""
    return apply(COPY, x, order=order)


@defnative(np.atleast_1d)
def _atleast_1d(*arys):
    res = [a if np.ndim(_val(a)) >= 1 else np.reshape(a, (1,)) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


@defnative(np.atleast_2d)
def _atleast_2d(*arys):
    res = []
    for a in arys:
        nd = np.ndim(_val(a))
        res.append(a if nd >= 2 else np.reshape(a, (1, 1) if nd == 0 else (1, -1)))
    return res[0] if len(res) == 1 else tuple(res)


def astype(x, dtype, copy=True):
    """Cast a tracer: float targets stay traced; integer/bool targets drop the gradient
    (their derivative is zero), as floor() does. ``copy=False`` to the same dtype returns x
    itself, as NumPy does."""
    dt = np.dtype(dtype)
    if not copy and dt == np.result_type(x.value) and type(x.value) is ndarray:
        return x
    if dt.kind not in "fc":
        return np.asarray(x.value).astype(dt) if np.ndim(x.value) else dt.type(x.value)
    if dt.kind == "c":
        raise UnsupportedError(f"casting a traced value to complex ({dt}) is not supported")
    return apply(ASTYPE, x, dt)


@defnative(np.astype)
def _astype_function(x, dtype, /, *, copy=True, device=None):
    return astype(x, dtype, copy)


# the ndarray methods that are these rules (engine.tracer_api binds them)
METHODS.update(reshape=reshape, transpose=transpose, astype=astype, copy=copy_method)


# --- selection ---
WHERE = Primitive(
    "numpy.where",
    lambda c, x, y: np.where(c, x, y),
    None,
    # the condition is read, the branches for their shapes only: a node keeps the mask alone
    shape_read("x")(lambda g, ans, c, x, y: unbroadcast(np.where(c, g, 0.0), x)),
    shape_read("y")(lambda g, ans, c, x, y: unbroadcast(np.where(c, 0.0, g), y)),
)


@defnative(np.where)
def _where(condition, x=None, y=None):
    if x is None and y is None:
        return np.where(_val(condition))
    if isinstance(condition, Tracer):
        condition = condition.value != 0
    return apply(WHERE, condition, x, y)


def _clip_fwd(x, lo, hi):
    return np.clip(x, lo, hi)


def _clip_dx(g, ans, x, lo, hi):
    inside = np.ones(np.shape(ans), bool)
    if lo is not None:
        inside &= x >= lo
    if hi is not None:
        inside &= x <= hi
    return unbroadcast(g * inside, x)


CLIP = Primitive(
    "numpy.clip",
    _clip_fwd,
    _clip_dx,
    lambda g, ans, x, lo, hi: unbroadcast(g * (x < lo), lo),
    lambda g, ans, x, lo, hi: unbroadcast(g * (x > hi), hi),
)


@defnative(np.clip)
def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue, **kwargs):
    if out is not None:
        raise UnsupportedError("np.clip(..., out=...) with traced values: write y = np.clip(...)")
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    return apply(CLIP, a, lo, hi)


def _sort_fwd(x, axis, kind):
    order = np.argsort(x, axis=axis, kind=kind)
    ans = np.empty_like(x)  # np.sort sorts a copy(order="K"): keep x's layout
    ans[...] = np.take_along_axis(x, order, axis=axis)
    return ans, order


@node_kind(output=6, parents=parent_at(1))
def _pb_sort(node, g, acc):
    _, p, order, axis, shape, dtype, _ans = node
    c = np.zeros(shape, dtype)
    np.put_along_axis(c, order, g, axis=axis)
    acc.add(p, c)


@defnative(np.sort)
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    x = a.value
    if axis is None:
        a, axis = np.ravel(a), -1
        x = a.value
    ans, idx = _sort_fwd(x, axis, "stable" if stable else kind)
    return record(a.tape, (_pb_sort, a.idx, idx, axis, x.shape, x.dtype, ans), ans)


def _positions(x, ans, kth, axis, kind):
    """Where each element of NumPy's partition ``ans`` came from in ``x``. argpartition runs the
    same selection as partition; should the two ever arrange a segment differently, equal values
    are matched up by a stable sort instead (any matching of equal values is a valid gradient)."""
    idx = np.argpartition(x, kth, axis=axis, kind=kind)
    if np.array_equal(np.take_along_axis(x, idx, axis=axis), ans, equal_nan=True):
        return idx
    got = np.take_along_axis(x, idx, axis=axis)
    order_got = np.argsort(got, axis=axis, kind="stable")
    order_ans = np.argsort(ans, axis=axis, kind="stable")
    fixed = np.empty_like(idx)
    np.put_along_axis(fixed, order_ans, np.take_along_axis(idx, order_got, axis=axis), axis=axis)
    return fixed


@defnative(np.partition)
def _partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise UnsupportedError("np.partition(..., order=...) of a traced value: structured arrays are not differentiated")
    if axis is None:
        a, axis = np.ravel(a), -1
    x = a.value
    ans = np.partition(x, kth, axis=axis, kind=kind)  # NumPy's values and layout
    idx = _positions(x, ans, kth, axis, kind)
    return record(a.tape, (_pb_sort, a.idx, idx, axis, x.shape, x.dtype, ans), ans)


# --- integer-valued functions of traced arrays: no gradient flows, results are plain ---
_PLAIN = (
    np.argmax, np.argmin, np.argsort, np.argwhere, np.nonzero, np.flatnonzero, np.shape, np.ndim,
    np.size, np.isclose, np.allclose, np.array_equal, np.count_nonzero, np.any, np.all, np.sign,
    np.floor, np.ceil, np.trunc, np.rint, np.round, np.around, np.isnan, np.isinf, np.isfinite,
    np.iscomplexobj, np.isrealobj, np.result_type, np.searchsorted,
    np.digitize, np.argpartition, np.fix, np.isreal, np.iscomplex, np.array_equiv, np.can_cast,
    np.min_scalar_type, np.may_share_memory, np.shares_memory,
)
for _f in _PLAIN:
    defnative(_f)(nondiff(_f))


# --- np.roll, np.triu, np.tril: a native rule the advisor advised (origin="advised"; docs/advisor.md § Engine defaults) ---
def _neg(shift):
    return tuple(-int(s) for s in shift) if isinstance(shift, (tuple, list)) else np.negative(shift)


ROLL = Primitive(
    "numpy.roll",
    lambda x, shift, axis=None: roll_kernel(x, shift, axis),
    lambda g, ans, x, shift, axis=None: roll_kernel(np.asarray(g), _neg(shift), axis),
    None,
    reads=False,
)


@defnative(np.roll, origin="advised")
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


defnative(np.triu, origin="advised")(_triangle(TRIU, np.triu))
defnative(np.tril, origin="advised")(_triangle(TRIL, np.tril))
