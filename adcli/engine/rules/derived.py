"""The verified list: NumPy functions derived from their own bodies (engine.derive), and the
few native rules those bodies lean on (diagonal, take, repeat, 1-d diag).

Every entry here has a finite-difference test in tests/test_derived.py for the calls its
``accepts`` admits; anything outside is a NoRuleError, not a guess.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from ..core import Tracer, node_kind, record
from ..derive import derive
from ..mutation import _pb_getitem, viewing
from ..registry import defnative
from ..tape import parent_at

ndarray = np.ndarray


def _ndim(x):
    return np.ndim(x.value) if isinstance(x, Tracer) else np.ndim(x)


# --- native helpers -------------------------------------------------------------------------


@node_kind(output=None, parents=parent_at(1))
def _pb_diagonal(node, g, acc):
    _, p, shape, dtype, offset, axis1, axis2 = node
    buf = acc.buffer(p, shape, dtype)
    moved = np.moveaxis(buf, (axis1, axis2), (-2, -1))  # a writable view of buf
    k = np.shape(g)[-1] if np.ndim(g) else 0
    rows = np.arange(k) + max(-offset, 0)
    cols = np.arange(k) + max(offset, 0)
    moved[..., rows, cols] += g


@defnative(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    x = a.value
    nd = np.ndim(x)
    axis1, axis2 = int(axis1) % nd, int(axis2) % nd
    ans = np.diagonal(x, offset, axis1, axis2)  # a read-only view in NumPy, tracked as one here
    t = record(a.tape, (_pb_diagonal, a.idx, x.shape, x.dtype, int(offset), axis1, axis2), ans)
    return viewing(a, t, lambda r: _diagonal(r, offset, axis1, axis2))


@node_kind(output=6, parents=parent_at(1))
def _pb_repeat(node, g, acc):
    _, p, shape, dtype, source, axis, _ans = node
    buf = acc.buffer(p, shape, dtype)  # any layout: never reshape it (that may copy)
    if axis is None:
        buf += np.bincount(source, np.ravel(g), minlength=buf.size).reshape(shape).astype(dtype, copy=False)
    else:
        moved = np.moveaxis(buf, axis, 0)
        np.add.at(moved, source, np.moveaxis(g, axis, 0))


@defnative(np.repeat)
def _repeat(a, repeats, axis=None):
    x = np.asarray(a.value)
    ans = np.repeat(x, repeats, axis)
    if axis is None:
        source = np.repeat(np.arange(x.size), repeats)
    else:
        axis = int(axis) % x.ndim
        source = np.repeat(np.arange(x.shape[axis]), repeats)
    return record(a.tape, (_pb_repeat, a.idx, x.shape, x.dtype, source, axis, ans), ans)


@defnative(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        raise UnsupportedError("np.take(..., out=/mode=) on a traced value: use indexing instead")
    # The forward is np.take itself (its result's layout differs from x[:, i]'s); the pullback
    # is that of the equivalent integer-array index.
    x = a.value
    indices = np.asarray(indices)
    ans = np.take(x, indices, axis)
    if axis is None:
        idx = np.unravel_index(np.where(indices < 0, indices + x.size, indices), x.shape) if x.ndim != 1 else indices
    else:
        idx = (slice(None),) * (int(axis) % x.ndim) + (indices,)
    return record(a.tape, (_pb_getitem, a.idx, idx, x.shape, x.dtype, True, ans), ans)


def _diag_native_or_derived(v, k=0):
    if _ndim(v) != 1:
        return _DIAG((v, k), {})
    n = v.value.shape[0] + abs(k)
    out = np.zeros_like(v, shape=(n, n))
    i = np.arange(v.value.shape[0])
    out[i + max(-k, 0), i + max(k, 0)] = v
    return out


def _dtype(v):
    return np.result_type(v.value if isinstance(v, Tracer) else v)


@defnative(np.ediff1d)
def _ediff1d(ary, to_end=None, to_begin=None):
    # NumPy's body subtracts into a slice of its result (out=result[k:l]), a write through a
    # view; the same result is a concatenation: to_begin, the differences, to_end, all in
    # ary's dtype (the extras must cast to it "same_kind", as NumPy checks).
    a = np.ravel(ary)
    dtype = _dtype(a)

    def extra(name, v):
        v = v if isinstance(v, Tracer) else np.asanyarray(v)
        if not np.can_cast(_dtype(v), dtype, "same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        return np.ravel(v)

    parts = [a[1:] - a[:-1]]
    if to_begin is not None:
        parts.insert(0, extra("to_begin", to_begin))
    if to_end is not None:
        parts.append(extra("to_end", to_end))
    parts = [p if _dtype(p) == dtype else p.astype(dtype) for p in parts]
    return np.concatenate(parts) if len(parts) > 1 else np.copy(parts[0])


# --- the verified list ----------------------------------------------------------------------


def _x_only(traced, args, kwargs):
    if 0 not in traced and "p" not in traced:
        return None
    return "with respect to x (the coefficients p are converted by np.asarray in its body)"


def _no_where(traced, args, kwargs):
    return "without where=" if "where" in kwargs else None


def _two_d(traced, args, kwargs):
    return None if _ndim(args[0]) == 2 else "for 2-d input"


derive(np.kron, None, "expand_dims + multiply + reshape", asarray=True)  # its body pads ranks with array(ndmin=)
derive(np.trace, note="diagonal + sum")
derive(np.triu, note="where with a constant mask")
derive(np.tril, note="where with a constant mask")
_DIAG = derive(np.diag, _two_d, "diagonal (2-d input); 1-d input has a native rule")
defnative(np.diag)(_diag_native_or_derived)
derive(np.outer, asarray=True, note="ravel + broadcasting multiply")
derive(np.var, _no_where, "mean, subtract, square, sum")
derive(np.std, _no_where, "sqrt of var")
derive(np.average, note="mean, or weighted sum / sum of weights")
derive(np.polyval, _x_only, "Horner's scheme", asarray=True)
derive(np.cov, asarray=True, note="average, subtract, dot")
derive(np.diff, note="slicing + subtract")
derive(np.trapezoid, note="diff, slicing, sum")
derive(np.flip, note="negative-step slicing")
derive(np.fliplr, note="negative-step slicing")
derive(np.flipud, note="negative-step slicing")
derive(np.rot90, note="flip + transpose")
derive(np.roll, note="slicing into a new array")
derive(np.tile, asarray=True, note="reshape + repeat")
derive(np.hstack, note="atleast_1d + concatenate")
derive(np.vstack, note="atleast_2d + concatenate")
derive(np.column_stack, asarray=True, note="reshape + concatenate")
derive(np.append, note="ravel + concatenate", lists=(0, 1))  # np.append([a, b], c): lists are array-likes
derive(np.sinc, note="where + sin + divide")
derive(np.array_split, note="swapaxes + slicing")
derive(np.split, note="array_split")
derive(np.hsplit, note="split")
derive(np.vsplit, note="split")
derive(np.dsplit, note="split")
derive(np.rollaxis, note="transpose")
derive(np.atleast_3d, note="reshape / indexing")
derive(np.gradient, note="slicing, subtract, divide")


# --- native rules built from traced operations (NumPy's bodies write into np.empty) ----------


@defnative(np.select)
def _select(condlist, choicelist, default=0):
    """Nested np.where, last condition innermost: the first true condition wins, as in NumPy."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = np.where(cond, choice, out)
    if isinstance(out, Tracer) and type(out.value) is np.ndarray and not out.value.flags.c_contiguous:
        out = out.copy(order="C")  # NumPy fills a new C-ordered array (np.where keeps F-ordered inputs' order)
    return out


@defnative(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    na, nb = np.shape(a)[-1], np.shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 and nb == 2:  # the z-component only, as NumPy returns it
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    a2 = a[..., 2] if na == 3 else 0.0
    b2 = b[..., 2] if nb == 3 else 0.0
    c = np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return np.moveaxis(c, -1, axisc)


@defnative(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    if mode != "constant" or set(kwargs) - {"constant_values"}:
        raise UnsupportedError(f"np.pad(..., mode={mode!r}) on a traced value: only mode='constant' has a rule")
    value = kwargs.get("constant_values", 0)
    if isinstance(value, Tracer) or np.ndim(value) != 0:
        raise UnsupportedError("np.pad on a traced value: constant_values must be one plain number")
    shape = np.shape(array.value if isinstance(array, Tracer) else array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (len(shape), 2))
    out = np.zeros_like(array, shape=tuple(int(n + lo + hi) for n, (lo, hi) in zip(shape, widths)))
    if value != 0:
        out = out + value
    out[tuple(slice(int(lo), int(lo + n)) for n, (lo, _) in zip(shape, widths))] = array
    return out


@defnative(np.lib.stride_tricks.sliding_window_view)
def _sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """The windows gathered by fancy indexing with NumPy's own windows of the element indices:
    the same values, read-only as NumPy's view is (writeable=True, a view to write through, is
    refused)."""
    if writeable:
        raise UnsupportedError("sliding_window_view(..., writeable=True) on a traced value is not supported")
    shape = np.shape(x.value if isinstance(x, Tracer) else x)
    index = np.lib.stride_tricks.sliding_window_view(np.arange(int(np.prod(shape))).reshape(shape), window_shape,
                                                     axis=axis)
    out = np.ravel(x)[index]
    if isinstance(out, Tracer):
        out.value.flags.writeable = False  # read-only, as NumPy's view is: a write raises ValueError
    return out


# fftshift and ifftshift: asarray, then roll
derive(np.fft.fftshift, None, "asarray + roll", asarray=True)
derive(np.fft.ifftshift, None, "asarray + roll", asarray=True)
