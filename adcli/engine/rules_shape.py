"""Native rules for shape, indexing and selection: reshape, transpose, concatenate, getitem,
where, clip, sort, ... (assignment lives in engine.mutation)."""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import UnsupportedError
from . import hooks
from .core import Primitive, Tracer, apply, mixed_tapes, node_kind, record
from .mutation import setitem, viewing
from .registry import defnative
from .rules_elementwise import nondiff
from .sums import sum_to_shape, unbroadcast
from .tape import no_parents, parent_at, parents_at
from .trim import shape_read

ndarray = np.ndarray


def _val(x):
    return x.value if isinstance(x, Tracer) else x


# --- reshapes and axis permutations (the cotangent is reshaped / permuted back) ---
# Each has its own node kind rather than a Primitive's general node: they are the most frequent
# view-making calls in derived code (np.squeeze, np.expand_dims, x.T, keepdims helpers), and the
# general path's argument handling cost ~2 µs more per call than the NumPy call itself.
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


# --- joining ---
@node_kind(output=4, parents=parents_at(1))
def _pb_concat(node, g, acc):
    _, parents, bounds, axis, _ans = node
    for (k, p) in parents:
        sl = [slice(None)] * np.ndim(g)
        sl[axis] = slice(bounds[k], bounds[k + 1])
        acc.add(p, g[tuple(sl)])


@defnative(np.concatenate)
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise UnsupportedError("np.concatenate(..., out=...) with traced values: write y = np.concatenate(...)")
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [np.ravel(a) for a in arrays], 0
    vals = [np.asarray(_val(a)) for a in arrays]
    ans = np.concatenate(vals, axis=axis, dtype=dtype)
    axis = int(axis) % ans.ndim
    bounds = [0, *itertools.accumulate(v.shape[axis] for v in vals)]  # Python ints: ~10x cheaper than np.cumsum here
    parents = tuple((k, a.idx) for k, a in enumerate(arrays) if isinstance(a, Tracer))
    tape = _one_tape(arrays)
    return record(tape, (_pb_concat, parents, bounds, axis, ans), ans)


def _one_tape(items):
    tapes = {id(a.tape): a.tape for a in items if isinstance(a, Tracer)}
    if len(tapes) != 1:
        ts = [a for a in items if isinstance(a, Tracer)]
        mixed_tapes(ts[0], ts[-1])
    return next(iter(tapes.values()))


@node_kind(output=3, parents=parents_at(1))
def _pb_stack(node, g, acc):
    _, parents, axis, _ans = node
    lead = (slice(None),) * axis
    for k, p in parents:
        acc.add(p, g[lead + (k,)])  # a view of g: the accumulator copies before adding into it


@defnative(np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is not None:
        raise UnsupportedError("np.stack(..., out=...) with traced values: write y = np.stack(...)")
    arrays = list(arrays)
    # NumPy's own stack of the values (its result, errors and axis rules), one node for all the
    # arrays: 3.0 -> ~4 µs for two 100x100 (expand_dims of each, then concatenate: 12.4 µs)
    ans = np.stack([_val(a) for a in arrays], axis=axis, dtype=dtype, casting=casting)
    axis = int(axis) % ans.ndim
    parents = tuple((k, a.idx) for k, a in enumerate(arrays) if isinstance(a, Tracer))
    return record(_one_tape(arrays), (_pb_stack, parents, axis, ans), ans)


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


# --- new arrays from a traced one: constant values, but traced so that later assignment into
# them is recorded (y = np.empty_like(x); y[i] = ... is the naive_map benchmark) ---
@node_kind(output=1, parents=no_parents)
def _pb_const(node, g, acc):
    pass


def constant_like(maker):
    def make(prototype, *args, **kwargs):
        proto = prototype.value if isinstance(prototype, Tracer) else prototype
        ans = maker(proto, *args, **kwargs)
        dt = ans.dtype
        if dt.kind != "f":
            return ans
        tape = prototype.tape
        return record(tape, (_pb_const, ans), ans)

    return make


for _f in (np.zeros_like, np.ones_like, np.empty_like):
    defnative(_f)(constant_like(_f))
_full_like_constant = constant_like(np.full_like)


@defnative(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    if not isinstance(fill_value, Tracer):
        return _full_like_constant(a, fill_value, dtype, order, subok, shape, **kwargs)
    # a traced fill: a traced array of a's layout with the fill broadcast into it (the
    # assignment's pullback sums the cotangent back to the fill's shape)
    proto = a.value if isinstance(a, Tracer) else a
    out = np.empty_like(proto, dtype, order, subok, shape, **kwargs)
    if out.dtype.kind != "f":  # an integer result: piecewise constant, no gradient
        return np.full_like(proto, fill_value.value, dtype, order, subok, shape, **kwargs)
    t = record(fill_value.tape, (_pb_const, out), out)
    setitem(t, Ellipsis, fill_value)
    return t
