"""What a tape keeps for its pullbacks, and no more.

* The values an elementwise node's VJPs read (core.apply1, core.apply2), told from their
  bytecode: a value no VJP reads is not kept, so the program's intermediate arrays are freed when
  it drops them rather than when the gradient ends (``vjp_reads``, ``node_trim``, ``shape_read``).
* Copies of the plain (untraced) arrays its pullbacks read (``kept``), shared while their bits
  are unchanged.
"""

from __future__ import annotations

import dis
import inspect
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


def shape_read(*names):
    """Declare that a VJP reads the parameters ``names`` for their shape and dtype only
    (``unbroadcast(c, x)``, a target shape): a node may then keep a stand-in of that shape and
    dtype (core.shape_only) instead of the array."""
    def mark(fn):
        fn.__adcli_shape_read__ = frozenset(names)
        return fn
    return mark


def params_read(fn) -> set | None:
    """Positions of ``fn``'s positional parameters its body reads, from its bytecode (a VJP's:
    1 is ``ans``, 2 and up the arguments), less those declared read for their shape only
    (shape_read); None when that cannot be told: not a plain Python function, ``*args``, a
    parameter an inner function captures, ``locals()``."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    params = code.co_varnames[:code.co_argcount]
    if set(params) & set(code.co_cellvars) or {"locals", "vars", "eval", "exec"} & set(code.co_names):
        return None
    read = set()
    for ins in dis.get_instructions(code):
        if ins.opname.startswith("LOAD_FAST") or ins.opname in ("LOAD_DEREF", "DELETE_FAST"):
            read.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    read -= getattr(fn, "__adcli_shape_read__", frozenset())
    return {i for i, p in enumerate(params) if p in read}


def vjp_reads(vjps: tuple) -> tuple | None:
    """For a node of any arity (core.record_general): the positions each VJP reads (frozenset;
    empty for None, a non-differentiable argument), or None when one cannot be told."""
    reads = tuple(frozenset() if v is None else params_read(v) for v in vjps)
    return None if any(r is None for r in reads) else tuple(frozenset(r) for r in reads)


def node_trim(vjps: tuple):
    """What an elementwise node must keep for its pullbacks, by traced arguments: for one
    argument, ``(ans?, x?)``; for two, a triple of ``(ans?, x?, y?)`` for x traced, y traced,
    both. A value no VJP that will run reads is not kept (``ans``: None; an argument: its shape,
    ``shape_only``, which ``unbroadcast`` needs), so the program's intermediate arrays are freed
    when it drops them rather than when the gradient ends: Autograd's VJP closures keep only
    what they read, and so do these nodes. None when everything is read."""
    if len(vjps) not in (1, 2):
        return None
    reads = [frozenset() if v is None else params_read(v) for v in vjps]
    if any(r is None for r in reads):
        return None
    slots = len(vjps) + 2  # g, ans, the arguments

    def need(traced):
        read = set().union(*(reads[k] for k in traced))
        return tuple(i in read for i in range(1, slots))

    patterns = [need((0,))] if len(vjps) == 1 else [need((0,)), need((1,)), need((0, 1))]
    if all(all(p) for p in patterns):
        return None
    return patterns[0] if len(vjps) == 1 else tuple(patterns)
