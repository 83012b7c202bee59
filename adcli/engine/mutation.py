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
* live *views* of the array (``row = y[0]``, ``y.T``, ``np.diagonal(y)``) see the write, and a
  write into a view is a write into the array it views, as in NumPy (see below);
* assignment into an input of the differentiated function (or a view of one) is refused: NumPy
  would modify the caller's array.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from ..errors import TracingError, UnsupportedError
from .containers import as_array
from .core import Tracer, _new, has_tracer, mixed_tapes, node_kind, record
from .escapes import FUNCTION_HINTS, PLAIN_ARRAY
from .fills import Fill, unfill
from .registry import defnative
from .sums import sum_to_shape
from .tape import parent_at
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
            part = np.array(part)  # a copy: the program may write into its index array later
            advanced = True
            if part.dtype.kind != "b":
                repeats = True
        elif isinstance(part, np.generic) and part.dtype.kind == "b":
            advanced = True
        out.append(part)
    return (tuple(out) if t is tuple else out[0]), advanced, repeats


def getitem(x: Tracer, idx):
    xv = x.value
    if type(idx) is int and type(xv) is ndarray and xv.ndim == 1:
        # x[i] of a vector, the scalar loops' read: a number, no view, no index to clean
        # (inline: ~40% of the call)
        ans = xv[idx]
        tape = x.tape
        nodes = tape.nodes
        nodes.append((_pb_item, x.idx, idx, xv))  # xv: its shape and dtype, when the buffer is made
        t = _new(Tracer)
        t.value = ans
        t.idx = len(nodes) - 1
        t.tape = tape
        return t
    idx, advanced, repeats = clean_index(idx)
    ans = xv[idx]
    # an advanced index makes a copy (an allocation, kept for the profiler); a basic one a view
    made = ans if advanced else None
    node = (_pb_getitem, x.idx, idx, np.shape(xv), getattr(xv, "dtype", np.float64), repeats, made)
    t = record(x.tape, node, ans)
    if not advanced and type(ans) is ndarray:
        viewing(x, t, lambda r: getitem(r, idx))
    return t


@node_kind(output=6, parents=parent_at(1))
def _pb_getitem(node, g, acc):
    _, p, idx, shape, dtype, repeats, _made = node
    buf = acc.grads[p]
    if buf is None or p not in acc.owned:  # else: the buffer an earlier read made (x[i] in a loop)
        buf = acc.buffer(p, shape, dtype)
    if not repeats:
        buf[idx] += g
    elif type(idx) is ndarray and idx.ndim == 1 and np.ndim(g) >= 2 and np.size(g) >= _ROWS_MIN * max(idx.shape[0], 1):
        _add_rows(buf, idx, g)
    else:
        np.add.at(buf, idx, g)  # x[[0, 0]]: both reads contribute


@node_kind(output=None, parents=parent_at(1))
def _pb_item(node, g, acc):
    """x[i] of a traced vector (the scalar loops' read, a number: no view, nothing made): g is
    added at i in the gradient buffer the first read made. The node keeps the vector for its
    shape and dtype, not a new shape tuple per read."""
    _, p, idx, xv = node
    buf = acc.grads[p]
    if buf is None or p not in acc.owned:
        buf = acc.buffer(p, xv.shape, xv.dtype)
    buf[idx] += g


_ROWS_MIN = 32  # elements per row: below this np.add.at is as fast (measured, NumPy 2.4)


def _add_rows(buf, idx, g):
    """``np.add.at(buf, idx, g)`` for rows picked by a 1-d integer array (an embedding lookup, a
    minibatch drawn with replacement): the k-th occurrence of every row is added in one fancy-
    indexed step (the rows of a step are distinct), so each row gets its shares in np.add.at's
    order and the sums are the same to the bit. np.add.at adds row by row, several times slower
    than the steps for rows of _ROWS_MIN elements or more (docs/engine.md § Measurements behind
    the code). A row picked more than _LEVELS_MAX times would take as many steps: np.add.at
    then."""
    n = idx.shape[0]
    if n == 0:
        return
    if idx.dtype.kind == "i" and idx.min() < 0:
        idx = np.where(idx < 0, idx + buf.shape[0], idx)  # -1 and n-1 are one row
    order = np.argsort(idx, kind="stable")
    rows = idx[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(rows[1:], rows[:-1], out=first[1:])
    at = np.arange(n)
    rank = at - np.maximum.accumulate(np.where(first, at, 0))  # occurrence number of each sorted position
    levels = int(rank.max()) + 1
    g = np.asarray(g)
    if levels > _LEVELS_MAX:
        np.add.at(buf, idx, g)
        return
    for k in range(levels):
        sel = order[rank == k]
        buf[idx[sel]] += g[sel]


_LEVELS_MAX = 16


# --- views: NumPy's semantics for writes ----------------------------------------------------
#
# Every traced value that shares memory with a traced array is a *view* of that array's root
# (``viewing`` below marks it: ``t._root``, and ``t._redo(root)`` re-applies the operations that
# made it). A write into the root (assignment, in-place operator, np.copyto, a ufunc's out=)
# updates the root's tracer and then re-derives every live view from the new value, so each
# sees the write as it does in NumPy. A write into a view is a write into its root at the
# positions the view's elements occupy (found from their memory addresses), then the same
# refresh. Each re-derivation is recorded on the tape like any other operation, so gradients
# flow through the view's new version to the root's new version.


def note_view(root: Tracer, view: Tracer) -> None:
    """Remember (weakly) that ``view`` shares ``root``'s memory."""
    views = root._views
    if views is None:
        views = root._views = []
    elif len(views) > 8:
        views[:] = [r for r in views if r() is not None]
    views.append(weakref.ref(view))


def viewing(x, t, redo):
    """Mark tracer ``t`` as a view of traced ``x`` when its value shares x's memory (NumPy view
    semantics, see engine.mutation): ``redo(x)`` makes ``t`` again from x, and is re-applied to
    the root array after a write into it so that the view sees the write."""
    if (isinstance(t, Tracer) and type(t.value) is ndarray and t.value.base is not None and type(x.value) is ndarray
            and _shares(t.value, x.value)):
        root = x._root
        if root is None:
            t._root, t._redo = x, redo
        else:
            inner = x._redo
            t._root, t._redo = root, lambda r: redo(inner(r))
        note_view(t._root, t)
    return t


def _shares(view: ndarray, x: ndarray) -> bool:
    """Whether ``view`` shares ``x``'s memory. NumPy gives a view the array that owns the memory
    as its base, so a view of x, or of x's own base, says so by identity; anything else (reshape
    may copy: then its base is that copy) is asked of np.may_share_memory, which costs more than
    the identity tests, hence second."""
    base = view.base
    if base is x or (base is not None and base is x.base):
        return True
    return np.may_share_memory(view, x)


def refresh_views(root: Tracer) -> None:
    """After a write into ``root``, make every live view of it see the new value."""
    views = root._views
    if not views:
        return
    live = [v for v in (r() for r in views) if v is not None]
    for v in live:
        new = v._redo(root)
        v.value, v.idx = new.value, new.idx
    root._views = [weakref.ref(v) for v in live]


def _write_through(t: Tracer, idx, v, action: str) -> None:
    """``t[idx] = v`` for a view ``t``: the same write into t's root, at the positions that the
    elements of ``t[idx]`` occupy in the root."""
    root = t._root
    _check_target(root, action, "a view of ")
    setitem(root, _positions(root.value, t.value, idx, action), v)


def _offsets(a: np.ndarray, start: int, item: int):
    """Each element's distance from address ``start``, in items (None if not whole items)."""
    off, rem = divmod(a.__array_interface__["data"][0] - start, item)
    if rem or any(s % item for s in a.strides):
        return None
    o = np.full(a.shape, off, dtype=np.intp)
    for k, (n, s) in enumerate(zip(a.shape, a.strides)):
        if n > 1 and s:
            o += (np.arange(n, dtype=np.intp) * (s // item)).reshape((n,) + (1,) * (a.ndim - k - 1))
    return o


def _positions(rv: np.ndarray, tv: np.ndarray, idx, action: str):
    """The index into ``rv`` that addresses the same memory as ``tv[idx]``."""
    start, item = rv.__array_interface__["data"][0], rv.itemsize
    mine = _offsets(tv, start, item)
    if mine is not None:
        mine = mine[idx]
        if rv.flags.c_contiguous:
            flat = mine
            ok = bool(np.all((flat >= 0) & (flat < rv.size)))
        else:
            theirs = _offsets(rv, start, item).ravel()
            order = np.argsort(theirs, kind="stable")
            flat = order[np.searchsorted(theirs[order], mine).clip(0, rv.size - 1)]
            ok = bool(np.all(theirs[flat] == mine))
        if ok:
            return np.unravel_index(flat, rv.shape)
    raise UnsupportedError(
        f"{action} through a view at {user_location(5)} whose memory the engine cannot map onto its base "
        "array: copy the view first (.copy()) and assign into the copy"
    )


def _check_target(t: Tracer, action: str, what: str = "") -> None:
    if t.tape.nodes[t.idx] is None:
        raise UnsupportedError(
            f"{action} into {what}an input of the differentiated function at {user_location(5)}: NumPy would "
            "modify the caller's array; copy it first (x = x.copy()) and assign into the copy"
        )


def _check_writable(t: Tracer) -> None:
    if type(t.value) is not ndarray:
        raise TypeError(f"{type(t.value).__name__!r} object does not support item assignment")
    if not t.value.flags.writeable:  # np.diagonal, np.broadcast_to: read-only views in NumPy too
        raise ValueError("assignment destination is read-only")


def copy_keep_layout(val: np.ndarray) -> np.ndarray:
    """A copy of ``val`` with val's exact strides (NumPy writes in place, so an array keeps its
    layout through assignments): for an array that does not own its memory, the memory it views
    (val.base, when not much larger) is copied and val rebuilt on it at the same offset."""
    base = val.base
    if val.flags.owndata or type(base) is not ndarray or base.size > 4 * val.size + 16:
        return np.copy(val, order="K")  # exact for arrays contiguous in some axis order
    copy = np.copy(base, order="K")
    offset = val.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if copy.strides != base.strides or offset < 0:
        return np.copy(val, order="K")
    # a buffer is handed over flat: a copy dense in another axis order than C's (an einsum's
    # output) is its memory-order ravel, a view starting at the same address
    buf = copy if copy.flags.c_contiguous else copy.ravel(order="K")
    if not buf.flags.c_contiguous or buf.__array_interface__["data"][0] != copy.__array_interface__["data"][0]:
        return np.copy(val, order="K")
    return np.ndarray(val.shape, val.dtype, buffer=buf, offset=offset, strides=val.strides)


# References to an ndarray that nobody else shares: the tracer's slot, the local name in
# setitem, and getrefcount's own argument.
_SOLE_OWNER_REFS = 3
# References to the view in `y[0:2] += v` when inplace() runs: the stack, the operator
# method's `self`, inplace's parameter and getrefcount's argument.
_TEMPORARY_VIEW_REFS = 4


def setitem(t: Tracer, idx, v) -> None:
    """``t[idx] = v`` for a traced array ``t`` (v traced or plain), with NumPy's semantics."""
    _check_writable(t)
    if type(v) is Fill:  # an array made by np.zeros & co. (engine.fills): what it stands for
        v = v.now()
    if isinstance(v, (list, tuple)) and has_tracer(v):  # NumPy converts the list: so do we (traced)
        v = as_array(unfill(v), "assignment", "right-hand side")
    if t._root is not None:
        _write_through(t, idx, v, "assignment")
        return
    _check_target(t, "assignment")
    idx, advanced, repeats = clean_index(idx)
    if isinstance(v, Tracer):
        if v.tape is not t.tape:
            mixed_tapes(t, v)
        vv, vp = v.value, v.idx
    else:
        vv, vp = v, None
    if repeats:
        _refuse_repeated(t.value, idx)
    val = t.value
    copied = None
    # In place only if this array owns its memory and nothing else references it (no saved
    # residual, no view, no caller); otherwise write into a copy (copy-on-write). A right-hand
    # side that views the target (y[1:] = y[:-1]) is buffered by NumPy itself.
    if not (val.flags.owndata and val.flags.writeable) or sys.getrefcount(val) > _SOLE_OWNER_REFS:
        val = copied = copy_keep_layout(val)  # NumPy writes in place: keep the layout (strides)
    val[idx] = vv
    node = (_pb_setitem, t.idx, vp, idx, np.shape(vv), len(t.tape.nodes), copied)
    t.value = val
    t.idx = record(t.tape, node, val).idx
    refresh_views(t)


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


@node_kind(output=6, parents=parent_at(1, 2))
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
    if type(src) is list or type(src) is tuple:  # an array-like: NumPy converts it (traced if it holds tracers)
        src = as_array(src, "np.copyto", "src") if has_tracer(src) else np.asarray(src)
    if not (where is True or (not isinstance(where, Tracer) and np.all(where))):
        src = np.where(where, src, dst)
    dst_dtype = np.result_type(dst.value if isinstance(dst, Tracer) else dst)
    src_dtype = np.result_type(src.value if isinstance(src, Tracer) else src)
    if not np.can_cast(src_dtype, dst_dtype, casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst_dtype!r} according to the rule {casting!r}")
    if isinstance(dst, Tracer):
        setitem(dst, Ellipsis, src)
        return None
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
    tracer. Arrays keep NumPy's semantics: the Tracer object itself now stands for the result,
    and views of it see the change."""
    if type(t.value) is not ndarray:
        return op(t, other)
    if t._root is not None and sys.getrefcount(t) <= _TEMPORARY_VIEW_REFS:
        # y[0:2] += v: Python computes tmp = y[0:2]; tmp += v; y[0:2] = tmp. The view is a
        # temporary, so the new value can be returned and the assignment that follows writes it.
        return op(t, other)
    if not t.value.flags.writeable:
        raise ValueError("output array is read-only")
    if t._root is None:
        _check_target(t, "in-place operator")
    new = op(t, other)  # the right-hand side is read before the write, as NumPy buffers overlaps
    if not isinstance(new, Tracer):
        return new
    if new.value.dtype != t.value.dtype or new.value.shape != t.value.shape:
        if new.value.shape != t.value.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {t.value.shape} doesn't match the broadcast shape {new.value.shape}"
            )
        new = new.astype(t.value.dtype)
    if t._root is not None:
        _write_through(t, Ellipsis, new, "in-place operator")
        return t
    value = new.value
    if type(value) is not ndarray or value.strides != t.value.strides:
        # NumPy writes into t's memory, so t keeps its layout; the result may have another one
        value = np.empty_like(t.value)
        value[...] = new.value
    t.value, t.idx = value, new.idx
    refresh_views(t)
    return t
