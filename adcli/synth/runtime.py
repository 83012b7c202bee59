"""What a synthesized rule calls besides the registry's VJPs: summing a cotangent back to its
operand's shape, an element's cotangent added into its array's, and the cotangent returned for
an argument (its shape and dtype, None for an argument that is not a float)."""

from __future__ import annotations

import numpy as np

from ..engine.sums import unbroadcast

__all__ = ["cotangent", "own", "scatter", "unbroadcast"]

ndarray = np.ndarray


def own(g):
    """The output's cotangent as an array the pullback may write into (``scatter`` adds into
    the adjoints in place; the engine's ``g`` is not the pullback's to change)."""
    return g.copy() if type(g) is ndarray else g


def scatter(d, x, i, c):
    """``d`` (the adjoint of ``x``) with ``c`` (the adjoint of ``x[i]``) added at ``i``. ``d`` is
    0.0 until the first contribution, then an array of x's shape the pullback owns (every other
    update of an adjoint makes a new array), so adding in place is safe and O(1) per element."""
    if type(d) is not ndarray or d.shape != np.shape(x):
        x = np.asarray(x)
        d = np.zeros(x.shape, x.dtype if x.dtype.kind in "fc" else float) + d
    d[i] += c
    return d


def cotangent(d, x):
    """The cotangent returned for the argument ``x``: ``d`` with x's shape and float dtype (a
    scalar 0.0 for an argument nothing reached becomes zeros), None when x holds no float."""
    if isinstance(x, ndarray):
        return unbroadcast(d, x) if x.dtype.kind in "fc" else None
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return d
    return None
