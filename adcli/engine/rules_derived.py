"""The verified list: NumPy functions derived from their own bodies (engine.derive), and the
few native rules those bodies lean on (diagonal, take, repeat, 1-d diag).

Every entry here has a finite-difference test in tests/test_derived.py for the calls its
``accepts`` admits; anything outside is a NoRuleError, not a guess.
"""

from __future__ import annotations

import numpy as np

from .core import OUTPUT_AT, Tracer, record
from .derive import derive
from .mutation import getitem
from .registry import defnative

ndarray = np.ndarray


def _ndim(x):
    return np.ndim(x.value) if isinstance(x, Tracer) else np.ndim(x)


# --- native helpers -------------------------------------------------------------------------


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
    ans = np.diagonal(x, offset, axis1, axis2)
    return record(a.tape, (_pb_diagonal, a.idx, x.shape, x.dtype, int(offset), axis1, axis2), ans)


def _pb_repeat(node, g, acc):
    _, p, shape, dtype, source, axis, _ans = node
    buf = acc.buffer(p, shape, dtype)
    if axis is None:
        np.add.at(buf.reshape(-1), source, np.ravel(g))
    else:
        moved = np.moveaxis(buf, axis, 0)
        np.add.at(moved, source, np.moveaxis(g, axis, 0))


@defnative(np.repeat)
def _repeat(a, repeats, axis=None):
    x = np.asarray(a.value)
    if axis is None:
        source = np.repeat(np.arange(x.size), repeats)
        ans = x.reshape(-1)[source]
    else:
        axis = int(axis) % x.ndim
        source = np.repeat(np.arange(x.shape[axis]), repeats)
        ans = np.take(x, source, axis=axis)
    return record(a.tape, (_pb_repeat, a.idx, x.shape, x.dtype, source, axis, ans), ans)


@defnative(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        from ..errors import UnsupportedError

        raise UnsupportedError("np.take(..., out=/mode=) on a traced value: use indexing instead")
    if axis is None:
        return getitem(np.ravel(a), np.asarray(indices))
    axis = int(axis) % _ndim(a)
    return getitem(a, (slice(None),) * axis + (np.asarray(indices),))


def _diag_native_or_derived(v, k=0):
    if _ndim(v) != 1:
        return _DIAG((v, k), {})
    n = v.value.shape[0] + abs(k)
    out = np.zeros_like(v, shape=(n, n))
    i = np.arange(v.value.shape[0])
    out[i + max(-k, 0), i + max(k, 0)] = v
    return out


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
derive(np.ediff1d, note="ravel, slicing + subtract")
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


OUTPUT_AT[_pb_repeat] = 6
