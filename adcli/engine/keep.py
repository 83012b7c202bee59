"""The copies a tape keeps of the plain (untraced) arrays its pullbacks read (``kept``)."""

from __future__ import annotations

import weakref

import numpy as np

ndarray = np.ndarray

_SHARE_MIN = 256  # elements: smaller arrays are copied each time (cheaper than the look-up)


def kept(v, tape=None):
    """A plain (untraced) array that a pullback will read: NumPy lets the program write into it
    after this operation (a reused buffer, ``w *= 2``), which would silently change the
    gradient, so the tape keeps a copy. Traced values need none: the engine never writes into
    memory a tape node holds (copy-on-write, engine.mutation).

    With the ``tape``, an array read again (a loop's constant: a velocity field, a design
    matrix) shares the copy made the last time, if it still holds the same bits, compared as
    unsigned integers (so -0.0 and 0.0, or two NaNs, are told apart): a loop of 50 steps keeps
    one copy of each, not 50."""
    if not isinstance(v, ndarray) or not v.size:
        return v
    if tape is None or v.size < _SHARE_MIN:
        return v.copy()
    copies = tape.copies
    if copies is None:
        copies = tape.copies = {}
    entry = copies.get(id(v))
    if entry is not None:
        ref, c = entry
        if ref() is v and c.shape == v.shape and c.dtype == v.dtype and _same_bits(v, c):
            return c
    c = v.copy()
    try:
        copies[id(v)] = (weakref.ref(v), c)  # weak: a temporary array is not kept alive by it
    except TypeError:
        pass
    return c


_BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


def _same_bits(v, c) -> bool:
    u = _BITS.get(v.dtype.itemsize)
    if u is None or v.dtype.hasobject or v.dtype.fields is not None:
        return False  # complex128, longdouble, structured: copied again
    return bool(np.array_equal(v.view(u), c.view(u)))
