"""The verified list: NumPy functions derived from their own bodies (engine.derive), and the
few native rules those bodies lean on (diagonal, take, repeat, 1-d diag).

Every entry here has a finite-difference test in tests/test_derived.py for the calls its
``accepts`` admits; anything outside is a NoRuleError, not a guess.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from .core import Tracer, node_kind, record
from .derive import derive
from .mutation import _pb_getitem, viewing
from .registry import defnative

ndarray = np.ndarray


def _ndim(x):
    return np.ndim(x.value) if isinstance(x, Tracer) else np.ndim(x)


# --- native helpers -------------------------------------------------------------------------


@node_kind(output=None)
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


@node_kind(output=6)
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


def _same_ndim(traced, args, kwargs):
    return None if len(args) >= 2 and _ndim(args[0]) == _ndim(args[1]) else "for arguments of equal rank"


def _x_only(traced, args, kwargs):
    if 0 not in traced and "p" not in traced:
        return None
    return "with respect to x (the coefficients p are converted by np.asarray in its body)"


def _no_where(traced, args, kwargs):
    return "without where=" if "where" in kwargs else None


def _two_d(traced, args, kwargs):
    return None if _ndim(args[0]) == 2 else "for 2-d input"


derive(np.kron, _same_ndim, "expand_dims + multiply + reshape")
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
derive(np.append, note="ravel + concatenate")
derive(np.sinc, note="where + sin + divide")
