"""Native rules that join arrays: concatenate and stack (one node whose pullback slices the
cotangent back into its parts), and hstack/vstack as one concatenate node (advised)."""

from __future__ import annotations

import itertools

import numpy as np

from ...errors import UnsupportedError
from ..core import Tracer, mixed_tapes, node_kind, record
from ..registry import defnative, entry
from ..tape import parents_at


def _val(x):
    return x.value if isinstance(x, Tracer) else x


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
    # arrays: a little more than NumPy's stack alone, a fraction of expand_dims of each then
    # concatenate (docs/engine.md § Measurements behind the code)
    ans = np.stack([_val(a) for a in arrays], axis=axis, dtype=dtype, casting=casting)
    axis = int(axis) % ans.ndim
    parents = tuple((k, a.idx) for k, a in enumerate(arrays) if isinstance(a, Tracer))
    return record(_one_tape(arrays), (_pb_stack, parents, axis, ans), ans)


# np.hstack and np.vstack: one concatenate node (above) instead of the derivation's
# atleast_1d/atleast_2d of each array, then concatenate. The corpus's rnn calls np.hstack 61
# times per gradient, each call derived costing well above np.concatenate (docs/advisor.md § Engine
# defaults; docs/engine.md § Measurements behind the code). Arrays of too few dimensions for the
# join's axis, and dtype=/casting=, keep the derivation.
_HSTACK, _VSTACK = np.hstack, np.vstack  # NumPy's own (engine.lists puts wrappers in np's namespace while recording)


@defnative(_HSTACK, origin="advised")
def _hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = list(tup)
    ndims = {np.ndim(a.value if isinstance(a, Tracer) else a) for a in arrays}
    if not arrays or 0 in ndims or dtype is not None or casting != "same_kind":
        return entry(_HSTACK).derivation((tup,), {"dtype": dtype, "casting": casting})
    return _join(arrays, 0 if np.ndim(arrays[0].value if isinstance(arrays[0], Tracer) else arrays[0]) == 1 else 1)


@defnative(_VSTACK, origin="advised")
def _vstack(tup, *, dtype=None, casting="same_kind"):
    arrays = list(tup)
    if not arrays or min(np.ndim(a.value if isinstance(a, Tracer) else a) for a in arrays) < 2 \
            or dtype is not None or casting != "same_kind":
        return entry(_VSTACK).derivation((tup,), {"dtype": dtype, "casting": casting})
    return _join(arrays, 0)


def _join(arrays: list, axis: int):
    return _concatenate(arrays, axis=axis)
