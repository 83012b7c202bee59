"""A cotangent summed back to a broadcast argument's shape by a product with ones, where NumPy's
reduction is slow (engine.core.sum_to_shape asks here first)."""

from __future__ import annotations

import math

import numpy as np

MATMUL_MIN = 1024  # elements: below, NumPy's reduction takes a few µs at most, less than choosing


def sum_by_product(c: np.ndarray, shape: tuple, lead: int):
    """``c`` summed to ``shape`` as one product with a vector of ones, when the summed axes are
    one run with axes left after it (the pullback of ``x[:, None, :] - y[None, :, :]``, of a
    bias added to a batch of few columns): NumPy's reduction over an axis that is not the last
    loops over the short trailing block for every element, 3-35x slower than the product
    (reducing the middle axis of 120x120x2: 142 µs against 6 µs; of 1000x2 to 1x2: 10.5 against
    1.1 µs). None for any other case (NumPy's reduction is then fine: the summed axes are the last
    ones, or not one run), for a non-contiguous ``c`` (a broadcast cotangent would be copied), and
    for other dtypes than float and complex."""
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
