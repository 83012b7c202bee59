"""Indexing and assignment: ``x[idx]``, ``y[idx] = v``, and in-place operators (``y += v``).

Reading ``x[idx]`` is a primitive whose pullback adds ``g`` into x's gradient buffer in place
(``np.add.at`` when integer-array indices may repeat), so a Python loop over ``x[i]`` costs
O(1) per element in the reverse pass, not O(len(x)).

Assignment is supported into arrays the traced code made itself (``np.zeros_like(x)``,
``np.empty_like(x)``, ``x.copy()``, results of operations), with NumPy's semantics:

* the Tracer object is updated (it now stands for the new version), so every Python reference
  to it sees the assignment, as with an ndarray;
* the write happens in place when nobody else holds the old memory (``sys.getrefcount``), and
  on a copy otherwise (copy-on-write), so values saved for earlier pullbacks are never changed;
* a live *view* of the array (``row = y[0]``) whose memory the assignment overwrites would
  change in NumPy but not in the engine, so that case is refused with an error, as are
  assignment into an input of the differentiated function and assignment through a view.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from ..errors import TracingError, UnsupportedError
from .core import OUTPUT_AT, Tracer, mixed_tapes, record, sum_to_shape
from .registry import defnative
from .where import numpy_entry, user_location

ndarray = np.ndarray


# --- indices ------------------------------------------------------------------------------


def clean_index(idx):
    """Return ``(idx, advanced, repeats)`` with tracers refused and lists made arrays.

    ``advanced``: integer or boolean array indexing is involved; ``repeats``: an integer array
    is present, so positions may repeat (the pullback must then use np.add.at).
    """
    t = type(idx)
    if t is int or t is slice or idx is None or idx is Ellipsis:
        return idx, False, False
    parts = idx if t is tuple else (idx,)
    advanced = repeats = False
    out = []
    for part in parts:
        pt = type(part)
        if isinstance(part, Tracer):
            raise TracingError(
                f"indexing with a traced value at {user_location(3)}: indices must be integers or masks; "
                "compute the index from plain values (e.g. np.argmax(x) gives a plain integer)"
            )
        if pt is list or (pt is ndarray) or isinstance(part, np.ndarray):
            part = np.asarray(part)
            advanced = True
            if part.dtype.kind != "b":
                repeats = True
        elif isinstance(part, np.generic) and part.dtype.kind == "b":
            advanced = True
        out.append(part)
    return (tuple(out) if t is tuple else out[0]), advanced, repeats


def getitem(x: Tracer, idx):
    idx, advanced, repeats = clean_index(idx)
    xv = x.value
    ans = xv[idx]
    # an advanced index makes a copy (an allocation, kept for the profiler); a basic one a view
    made = ans if advanced else None
    node = (_pb_getitem, x.idx, idx, np.shape(xv), getattr(xv, "dtype", np.float64), repeats, made)
    t = record(x.tape, node, ans)
    if not advanced and type(ans) is ndarray:
        from .rules_shape import viewing

        viewing(x, t)
    return t


def _pb_getitem(node, g, acc):
    _, p, idx, shape, dtype, repeats, _made = node
    buf = acc.buffer(p, shape, dtype)
    if repeats:
        np.add.at(buf, idx, g)  # x[[0, 0]]: both reads contribute
    else:
        buf[idx] += g


# --- views: who might see an in-place write ----------------------------------------------
#
# Each live view of an assignable array is remembered (weakly) together with the array value it
# was taken from. An assignment ``t[idx] = v`` overlaps a view when the view shares memory with
# ``M[idx]`` in that same value ``M``: an index-space test that stays right after copy-on-write
# has moved ``t`` to new memory.


def note_view(root: Tracer, view: Tracer) -> None:
    """Remember that ``view`` shares the memory of ``root``'s current value."""
    views = getattr(root, "views", None)
    if views is None:
        views = root.views = []
    elif len(views) > 8:
        views[:] = [(v, m) for v, m in views if v() is not None]
    views.append((weakref.ref(view), weakref.ref(root.value)))


def _check_views(t: Tracer, idx, advanced: bool, action: str, exclude=None) -> None:
    views = getattr(t, "views", None)
    if not views:
        return
    live = []
    for vref, mref in views:
        v, m = vref(), mref()
        if v is None or m is None:
            continue
        live.append((vref, mref))
        if v is exclude:
            continue
        # Integer indices are made slices so that m[idx] stays a view of m (a scalar copy
        # would share no memory); advanced indices count as touching the whole array.
        region = m if advanced else m[_as_view_index(idx)]
        if np.shares_memory(v.value, region):
            raise UnsupportedError(
                f"{action} at {user_location(4)} overwrites memory that a view taken earlier "
                "(e.g. row = y[0], y.T, y.reshape(...)) also sees; NumPy would change the view too, which "
                "the engine cannot follow: take a copy of the view (.copy()) before the assignment"
            )
    views[:] = live


def _as_view_index(idx):
    parts = idx if type(idx) is tuple else (idx,)
    out = tuple(slice(i, i + 1 if i != -1 else None) if isinstance(i, (int, np.integer)) else i for i in parts)
    return out


def _check_target(t: Tracer, action: str) -> None:
    if type(t.value) is not ndarray:
        raise TypeError(f"{type(t.value).__name__!r} object does not support item assignment")
    if not t.value.flags.writeable:  # np.diagonal, np.broadcast_to: read-only views in NumPy too
        raise ValueError("assignment destination is read-only")
    if getattr(t, "root", None) is not None and not _detach(t):
        raise UnsupportedError(
            f"{action} through a view at {user_location(4)} (e.g. y[i][j] = v or y.T[...] = v): write into the "
            "array itself (y[i, j] = v), or copy the view first"
        )
    if t.tape.nodes[t.idx] is None:
        raise UnsupportedError(
            f"{action} into an input of the differentiated function at {user_location(4)}: NumPy would modify "
            "the caller's array; copy it first (x = x.copy()) and assign into the copy"
        )


# References to a view's root tracer that only the view holds: the view's ``root`` slot, the
# local name in _detach and getrefcount's argument.
_ROOT_ONLY_IN_VIEW = 3


def _detach(t: Tracer) -> bool:
    """Make view ``t`` an array of its own when nothing else can see its root's memory (the root
    is a temporary: ``z = np.zeros_like(x).reshape(3, 2)``, ``w = x.copy().T``): a write into
    ``t`` is then a write into an array nobody else observes, as in NumPy. The new memory is a
    copy of the whole root with ``t`` at the same offset and strides, so t's layout is NumPy's."""
    root = t.root
    views = getattr(root, "views", None) or []
    if any(v() is not None and v() is not t for v, _ in views):
        return False  # another view of the same memory is alive: it would have to see the write
    if sys.getrefcount(root) > _ROOT_ONLY_IN_VIEW:
        return False  # the root itself is still reachable (a name, a list, a derived body)
    base, val = root.value, t.value
    if type(base) is not ndarray or not np.shares_memory(base, val):
        return False
    moved = _copy_keep_layout(val, base)
    node = (_pb_detach, t.idx, moved)
    t.root = None
    t.value = moved
    t.idx = record(t.tape, node, moved).idx
    return True


def _copy_keep_layout(val: np.ndarray, base=None) -> np.ndarray:
    """A copy of ``val`` with val's exact strides (NumPy writes in place, so an array keeps its
    layout through assignments): for an array that does not own its memory, the memory it views
    (``base``, or val.base when not much larger) is copied and val rebuilt on it at the same offset."""
    if base is None:
        base = val.base
        if val.flags.owndata or type(base) is not ndarray or base.size > 4 * val.size + 16:
            return np.copy(val, order="K")  # exact for arrays contiguous in some axis order
    copy = np.copy(base, order="K")
    offset = val.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if copy.strides != base.strides or offset < 0:
        return np.copy(val, order="K")
    return np.ndarray(val.shape, val.dtype, buffer=copy, offset=offset, strides=val.strides)


def _pb_detach(node, g, acc):
    acc.add(node[1], g)


# References to an ndarray that nobody else shares: the tracer's slot, the local name in
# setitem, and getrefcount's own argument.
_SOLE_OWNER_REFS = 3
# References to a right-hand side that only the assignment statement holds: the interpreter's
# stack, setitem's parameter and getrefcount's argument.
_TEMPORARY_REFS = 3
# References to the view in `y[0:2] += v` when inplace() runs: the stack, the operator
# method's `self`, inplace's parameter and getrefcount's argument.
_TEMPORARY_VIEW_REFS = 4
# References to the right-hand side of `y += y.T` when inplace() runs: the stack, the operator
# method's `other`, inplace's parameter and getrefcount's argument.
_TEMPORARY_OPERAND_REFS = 4


def setitem(t: Tracer, idx, v) -> None:
    """``t[idx] = v`` for a traced array ``t`` (v traced or plain)."""
    _check_target(t, "assignment")
    idx, advanced, repeats = clean_index(idx)
    if isinstance(v, Tracer):
        if v.tape is not t.tape:
            mixed_tapes(t, v)
        vv, vp = v.value, v.idx
    else:
        vv, vp = v, None
        if isinstance(v, (list, tuple)) and any(isinstance(e, Tracer) for e in v):
            raise TracingError(
                f"assigning a list of traced values at {user_location(3)}: use np.stack(...) to make one traced array first"
            )
    if repeats:
        _refuse_repeated(t.value, idx)
    # A right-hand side that is a temporary view (y[1:] = y[:-1]) is read before the write, as
    # NumPy does; one the program still holds (z = y[:-1]; y[1:] = z) is checked like any view.
    temporary = v if isinstance(v, Tracer) and sys.getrefcount(v) <= _TEMPORARY_REFS else None
    _check_views(t, idx, advanced, "assignment", exclude=temporary)
    val = t.value
    copied = None
    # In place only if this array owns its memory and nothing else references it (no saved
    # residual, no view, no caller); otherwise write into a copy (copy-on-write).
    if not (val.flags.owndata and val.flags.writeable) or sys.getrefcount(val) > _SOLE_OWNER_REFS:
        val = copied = _copy_keep_layout(val)  # NumPy writes in place: keep the layout (strides)
    val[idx] = vv
    node = (_pb_setitem, t.idx, vp, idx, np.shape(vv), len(t.tape.nodes), copied)
    t.value = val
    new = record(t.tape, node, val)
    t.idx = new.idx


def _refuse_repeated(val, idx):
    try:
        positions = np.arange(val.size).reshape(val.shape)[idx].ravel()
    except IndexError:
        return  # NumPy will raise its own error on the assignment itself
    if len(np.unique(positions)) != len(positions):
        raise UnsupportedError(
            f"assignment with repeated indices at {user_location(4)}: only the last write survives in NumPy, "
            "which has no useful gradient; use unique indices, or np.add.at semantics via y = y + ..."
        )


def _pb_setitem(node, g, acc):
    _, p_old, p_v, idx, vshape, me, _copied = node
    if p_v is not None:
        gv = np.array(g[idx], copy=True)  # a copy: g[idx] may be a view we are about to zero
        if gv.shape != vshape:
            gv = assigned_cotangent(gv, vshape)
        acc.add(p_v, gv)
    # The old version's cotangent is g with the overwritten region zeroed; reuse g's buffer
    # when the accumulator owns it (nothing else can see it), otherwise work on a copy.
    if me in acc.owned and type(g) is ndarray:
        acc.owned.discard(me)
    else:
        g = np.array(g, copy=True)
    g[idx] = 0
    acc.give(p_old, g)


def assigned_cotangent(gv, vshape: tuple):
    """The cotangent of a value of shape ``vshape`` that NumPy broadcast into a region whose
    cotangent is ``gv``. Assignment broadcasting may also *drop* leading size-1 axes of the
    value (``y[0:2] = v[None]``), which ordinary broadcasting never does."""
    core = vshape
    while len(core) > gv.ndim and core[0] == 1:
        core = core[1:]
    if len(core) > gv.ndim:  # a size-1 value written into a scalar slot: y[0] = v[None]
        return np.reshape(gv.sum(), vshape)
    return np.reshape(sum_to_shape(gv, core), vshape)


# --- np.copyto ------------------------------------------------------------------------------


@defnative(np.copyto)
def _copyto(dst, src, casting="same_kind", where=True):
    """``np.copyto(dst, src)``: an assignment ``dst[...] = src`` into a traced ``dst``."""
    if not (where is True or (not isinstance(where, Tracer) and np.all(where))):
        src = np.where(where, src, dst)
    dst_dtype = np.result_type(dst.value if isinstance(dst, Tracer) else dst)
    src_dtype = np.result_type(src.value if isinstance(src, Tracer) else src)
    if not np.can_cast(src_dtype, dst_dtype, casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst_dtype!r} according to the rule {casting!r}")
    if isinstance(dst, Tracer):
        setitem(dst, Ellipsis, src)
        return None
    from .tracer_api import FUNCTION_HINTS, PLAIN_ARRAY

    caller = numpy_entry(2)
    if caller is not None and caller in FUNCTION_HINTS:
        raise TracingError(
            f"{caller}(...) at {user_location(3)} with a traced fill value writes it into a plain array: the "
            f"gradient would be lost. {FUNCTION_HINTS[caller]}"
        )
    raise TracingError(
        f"np.copyto into a plain array with a traced source at {user_location(3)}: {PLAIN_ARRAY}Make the "
        "destination from a traced value (np.zeros_like(x)), or write y = np.broadcast_to(src, shape).copy()"
    )


# --- in-place operators -------------------------------------------------------------------


def inplace(t: Tracer, op, other):
    """``t op= other`` (e.g. ``+=``). Scalars are immutable, so Python rebinds: we return a new
    tracer. Arrays keep NumPy's semantics: the Tracer object itself now stands for the result."""
    if type(t.value) is not ndarray:
        return op(t, other)
    if getattr(t, "root", None) is not None and sys.getrefcount(t) <= _TEMPORARY_VIEW_REFS:
        # y[0:2] += v: Python computes tmp = y[0:2]; tmp += v; y[0:2] = tmp. The view is a
        # temporary, so the new value can be returned and the assignment that follows writes it.
        return op(t, other)
    _check_target(t, "in-place operator")
    # y += y.T: the right-hand side view is a temporary of this statement, read before the write
    # (NumPy buffers overlapping operands); a view the program still holds is checked as usual.
    temporary = other if isinstance(other, Tracer) and sys.getrefcount(other) <= _TEMPORARY_OPERAND_REFS else None
    new = op(t, other)
    if not isinstance(new, Tracer):
        return new
    if new.value.dtype != t.value.dtype or new.value.shape != t.value.shape:
        if new.value.shape != t.value.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {t.value.shape} doesn't match the broadcast shape {new.value.shape}"
            )
        new = new.astype(t.value.dtype)
    _check_views(t, Ellipsis, False, "in-place operator", exclude=temporary)
    value = new.value
    if value.strides != t.value.strides:
        # NumPy writes into t's memory, so t keeps its layout; the result may have another one
        value = np.empty_like(t.value)
        value[...] = new.value
    t.value, t.idx = value, new.idx
    return t


OUTPUT_AT.update({_pb_getitem: 6, _pb_setitem: 6, _pb_detach: 2})
