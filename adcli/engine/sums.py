"""A cotangent summed back to the shape of the argument it belongs to (undoing NumPy
broadcasting): by a product with ones where NumPy's reduction is slow, else by that reduction."""

from __future__ import annotations

import math

import numpy as np

ndarray = np.ndarray
MATMUL_MIN = 1024  # elements: below, NumPy's reduction takes a few µs at most, less than choosing


def sum_by_product(c: np.ndarray, shape: tuple, lead: int):
    """``c`` summed to ``shape`` as one product with a vector of ones, when the summed axes are
    one run with axes left after it (the pullback of ``x[:, None, :] - y[None, :, :]``, of a
    bias added to a batch of few columns): NumPy's reduction over an axis that is not the last
    loops over the short trailing block for every element, many times slower than the product
    (docs/engine.md § Measurements behind the code). None for any other case (NumPy's reduction
    is then fine: the summed axes are the last ones, or not one run), for a non-contiguous ``c``
    (a broadcast cotangent would be copied), and for other dtypes than float and complex."""
    if c.size < MATMUL_MIN or c.dtype.kind not in "fc" or not c.flags.c_contiguous:
        return None
    summed = [i for i in range(c.ndim) if i < lead or (shape[i - lead] == 1 and c.shape[i] != 1)]
    if not summed:
        return None
    first, last = summed[0], summed[-1]
    if last - first + 1 != len(summed) or last == c.ndim - 1:
        return None
    dims = c.shape
    pre, n, post = math.prod(dims[:first]), math.prod(dims[first:last + 1]), math.prod(dims[last + 1:])
    ones = np.ones(n, c.dtype)
    out = ones @ (c.reshape(n, post) if pre == 1 else c.reshape(pre, n, post))
    return out.reshape(shape)


def unbroadcast(c, x):
    """Sum a cotangent ``c`` down to the shape of the argument ``x`` it belongs to (undoing
    NumPy broadcasting), and give it x's float dtype when x is a float array."""
    if type(x) is ndarray:
        if type(c) is ndarray:
            if c.shape != x.shape:
                c = sum_to_shape(c, x.shape)
            if c.dtype != x.dtype and x.dtype.kind == "f":
                c = c.astype(x.dtype)
        elif x.shape != ():
            c = np.full(x.shape, c, dtype=x.dtype if x.dtype.kind == "f" else None)
        return c
    if type(c) is ndarray and c.ndim:  # x was a scalar that got broadcast
        return c.sum()
    return c


def sum_to_shape(c: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``c`` over the axes that broadcasting added or stretched to reach ``c.shape``."""
    lead = c.ndim - len(shape)
    by_product = sum_by_product(c, shape, lead)
    if by_product is not None:
        return by_product
    if lead:
        c = _add_reduce(c, axis=tuple(range(lead)))  # what c.sum() calls, without its Python layer
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and c.shape[i] != 1)
    if axes:
        c = _add_reduce(c, axis=axes, keepdims=True)
    return c


_add_reduce = np.add.reduce
