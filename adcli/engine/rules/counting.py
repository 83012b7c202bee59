"""Native rules for NumPy functions that mostly count, but carry traced floats through:
``np.unique``'s values, ``np.bincount``'s and ``np.histogram``'s weights, and histogram edges
taken from the data's range. Their integer outputs (counts, indices) are plain, exactly as
before; the float outputs that depend smoothly on a traced input are traced.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from ..core import Primitive, Tracer, apply, record_result
from ..registry import defnative
from ..sums import unbroadcast
from ..where import user_location


def _plain(x):
    return x.value if isinstance(x, Tracer) else x


@defnative(np.unique)
def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, **kwargs):
    """The unique values are elements of ``ar``: a gather from it (NumPy's first occurrences)."""
    out = np.unique(_plain(ar), return_index=True, return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis, **kwargs)
    values, first = out[0], out[1]
    if not isinstance(ar, Tracer):
        traced = values
    elif axis is None:
        traced = np.ravel(ar)[first]
    else:
        traced = np.take(ar, first, axis=axis)
    extras = ([first] if return_index else []) + list(out[2:])
    return (traced, *extras) if extras else traced


def _bincount_vjp(g, ans, x, weights, minlength):
    return unbroadcast(np.asarray(g)[np.asarray(x)], weights)


_BINCOUNT = Primitive("numpy.bincount", lambda x, w, minlength: np.bincount(x, weights=w, minlength=minlength),
                      None, _bincount_vjp)


@defnative(np.bincount)
def _bincount(x, /, weights=None, minlength=0):
    if isinstance(x, Tracer):
        raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule 'safe'")
    return apply(_BINCOUNT, x, weights, minlength=minlength) if isinstance(weights, Tracer) \
        else np.bincount(x, weights=weights, minlength=minlength)


def _bin_of(a, edges):
    """Each sample's bin as np.histogram assigns it (the last bin closed), -1 outside."""
    idx = np.searchsorted(edges, a, side="right") - 1
    idx = np.where(a == edges[-1], len(edges) - 2, idx)
    return np.where((a >= edges[0]) & (a <= edges[-1]), idx, -1)


def _counts_vjp(g, ans, a, bins, rng, weights, edges):
    b = _bin_of(np.ravel(a), edges)
    c = np.where(b >= 0, np.asarray(g)[np.clip(b, 0, None)], 0.0)
    return np.reshape(c, np.shape(weights))


def _edges_vjp(g, ans, a, bins, rng, weights, edges):
    # edges = lo + k/n (hi - lo), lo = min(a), hi = max(a): lo gets sum g (1 - k/n), hi gets sum g k/n
    n = len(edges) - 1
    k = np.arange(n + 1) / n
    flat = np.ravel(a)
    c = np.zeros(flat.shape, dtype=np.result_type(flat, np.float64))
    c[np.argmin(flat)] += np.sum(g * (1.0 - k))
    c[np.argmax(flat)] += np.sum(g * k)
    return np.reshape(c, np.shape(a))


_COUNTS = Primitive("numpy.histogram", None, None, None, None, _counts_vjp)
_EDGES = Primitive("numpy.histogram", None, _edges_vjp)


@defnative(np.histogram)
def _histogram(a, bins=10, range=None, density=None, weights=None):
    if isinstance(range, Tracer) or isinstance(bins, Tracer) or (type(range) in (tuple, list) and any(
            isinstance(r, Tracer) for r in range)):
        raise UnsupportedError(f"np.histogram with traced bins or range at {user_location(3)}: the counts are piecewise "
                               "constant in them; pass plain values (adcli.stop_gradient)")
    counts, edges = np.histogram(_plain(a), bins=bins, range=range, density=density, weights=_plain(weights))
    data_edges = isinstance(a, Tracer) and range is None and isinstance(bins, (int, np.integer))
    if isinstance(a, Tracer) and range is None and isinstance(bins, str):
        raise UnsupportedError(f"np.histogram(traced, bins={bins!r}) at {user_location(3)}: its edges follow the data "
                               "by a rule adcli does not differentiate; pass bins=int, range=, or adcli.stop_gradient")
    if density and (isinstance(weights, Tracer) or data_edges):
        raise UnsupportedError(f"np.histogram(..., density=True) of traced weights or data at {user_location(3)} is not "
                               "supported: divide the counts by their sum and the bin widths yourself")
    params = {"edges": edges}
    if isinstance(weights, Tracer):
        counts = record_result(_COUNTS, counts, (_plain(a), bins, range, weights), params)
    if data_edges:
        edges = record_result(_EDGES, edges, (a, bins, range, None), params)
    return counts, edges
