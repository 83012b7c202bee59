"""Native rules for the norms: np.linalg.norm, vector_norm and matrix_norm.

The p-norms (2, Frobenius, any p along axes) have one rule, whose forward calls the very NumPy
function the program called, with its arguments: np.linalg.norm takes a BLAS dot product for the
2-norm of a whole array, vector_norm a pairwise sum, and the two differ in the last bits; a
traced norm has NumPy's value, not a close one. The other orders (1, inf, nuclear, spectral) are
derived from the operations NumPy's own implementation uses.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..core import Primitive, apply
from ..registry import defnative
from .contractions import cast_like
from .reductions import keep


def _pnorm_vjp(g, ans, x, ord, axis, keepdims, exact):
    # d||x||_p / dx = sign(x) (|x| / ||x||)^(p-1); at ||x|| = 0 (and, for p < 1, at x_i = 0)
    # we return the subgradient 0. The cotangent is divided by the norm on the reduced shape,
    # and the zero-norm case costs a pass over x only when it occurs: the 2-norm's pullback is
    # one product with x (three passes before, several times slower: docs/engine.md § Measurements
    # behind the code).
    if ord == 2 and type(ans) is not np.ndarray:  # the norm of a whole array: scalar arithmetic first
        return cast_like(np.zeros_like(x) if ans == 0 else x * (g / ans), x)
    n = keep(ans, x, axis, keepdims)
    zero = n == 0
    if ord == 2:
        out = x * (keep(g, x, axis, keepdims) / np.where(zero, 1.0, n))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** (p - 1) for p < 1: masked out
            r = np.where(x == 0, 0.0, np.sign(x) * (np.abs(x) / np.where(zero, 1.0, n)) ** (ord - 1))
        out = keep(g, x, axis, keepdims) * r
    if np.any(zero):
        out = np.where(zero, 0.0, out)
    return cast_like(out, x)


# ``ord``, ``axis``, ``keepdims``: the p-norm the VJP differentiates; ``exact``: the program's own
# call (the NumPy function and its arguments), which computes the value
PNORM = Primitive("numpy.linalg.vector_norm", lambda x, ord, axis, keepdims, exact: exact(x), _pnorm_vjp)


def _pnorm(x, ord, axis, keepdims, exact):
    return apply(PNORM, x, ord=ord, axis=axis, keepdims=keepdims, exact=exact)


def _vector_norm(x, ord, axis, keepdims, exact):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return _pnorm(x, 2, axis, keepdims, exact)
    if ord == 0:  # the number of nonzeros: piecewise constant, no gradient
        return np.linalg.vector_norm(x.value, axis=axis, keepdims=keepdims, ord=0)
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    return _pnorm(x, float(ord), axis, keepdims, exact)


def _matrix_norm(x, ord, axis, keepdims, exact):
    nd = np.ndim(x.value)
    row, col = (int(ax) % nd for ax in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (None, "fro", "f"):
        return _pnorm(x, 2, (row, col), keepdims, exact)
    if ord in ("nuc", 2, -2):
        s = np.linalg.svd(np.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        ret = {"nuc": np.sum, 2: np.max, -2: np.min}[ord](s, axis=-1)
    elif ord in (1, -1):  # largest / smallest column sum of |x|
        ret = (np.max if ord == 1 else np.min)(np.sum(np.abs(x), axis=row), axis=col - (col > row))
    elif ord in (np.inf, -np.inf):  # largest / smallest row sum of |x|
        ret = (np.max if ord > 0 else np.min)(np.sum(np.abs(x), axis=col), axis=row - (row > col))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(np.shape(x.value))
        shape[row] = shape[col] = 1
        ret = np.reshape(ret, tuple(shape))
    return ret


@defnative(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    exact = partial(np.linalg.norm, ord=ord, axis=axis, keepdims=keepdims)
    nd = np.ndim(x.value)
    if axis is None:
        if ord is None:  # the 2-norm of the flattened array, whatever its rank
            return _pnorm(x, 2, None, bool(keepdims), exact)
        if nd not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axis = tuple(range(nd))
    elif not isinstance(axis, (tuple, list)):
        axis = (int(axis),)
    axis = tuple(int(ax) % nd for ax in axis)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], bool(keepdims), exact)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, bool(keepdims), exact)
    raise ValueError("Improper number of dimensions to norm.")


@defnative(np.linalg.vector_norm)
def _vector_norm_api(x, /, *, axis=None, keepdims=False, ord=2):
    if isinstance(axis, list):
        axis = tuple(axis)
    return _vector_norm(x, ord, axis, bool(keepdims),
                        partial(np.linalg.vector_norm, axis=axis, keepdims=keepdims, ord=ord))


@defnative(np.linalg.matrix_norm)
def _matrix_norm_api(x, /, *, keepdims=False, ord="fro"):
    return _matrix_norm(x, ord, (-2, -1), bool(keepdims), partial(np.linalg.matrix_norm, keepdims=keepdims, ord=ord))
