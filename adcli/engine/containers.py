"""Traced values inside the list and tuple arguments of a NumPy function, and ndarray subclasses
beside them, at the door of ``__array_function__``: each is differentiated or refused.

NumPy's dispatch hands the engine ``np.concatenate([x[:2], [x2, x3]])`` or ``np.dot(A, [a, b])``
with the lists as they are. NumPy itself would convert an array-like list with ``np.asarray``;
a rule that unwrapped it one level would read the traced values inside as constants (a silent
zero gradient), or build a tracer inside a tracer. So before a rule sees them:

* a list or tuple holding a traced value, in an argument NumPy takes as one array, becomes the
  traced array ``np.array`` makes of it (engine.lists: NumPy's shape, dtype and errors);
* in an argument that is a *sequence* of arrays (``np.concatenate``'s, ``np.stack``'s, the
  ``np.block`` nest, ...), each item does;
* a list NumPy cannot make one float array of is refused by name, and so is an ndarray subclass
  with semantics of its own (``np.matrix``, masked arrays: escapes.refuse_subclass);
* an array made by ``np.zeros`` & co. in the differentiated code (engine.fills) is what it
  stands for: its tracer, or its plain value.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from .core import ArrayTracer, Tracer, has_tracer
from .escapes import refuse_subclass
from .fills import Fill
from .registry import names_of
from .where import user_location

ndarray = np.ndarray
_REAL_ARRAY, _REAL_ASARRAY = np.array, np.asarray  # NumPy's own (engine.lists patches the module's names)

# function -> the positions (and keyword names) that are sequences of array-likes
_SEQUENCES = {
    np.concatenate: (0, "arrays"), np.stack: (0, "arrays"), np.hstack: (0, "tup"), np.vstack: (0, "tup"),
    np.dstack: (0, "tup"), np.column_stack: (0, "tup"), np.linalg.multi_dot: (0, "arrays"),
    np.select: (0, 1, "condlist", "choicelist"), np.choose: (1, "choices"), np.block: (0, "arrays"),
    np.lexsort: (0, "keys"),
}
_NESTED = frozenset({np.block})  # a nest of lists: each leaf an array-like


def arguments(func, args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` with each container holding a traced value made traced arrays as
    NumPy would convert it (see module doc); refuses ndarray subclasses and what NumPy cannot
    make one float array of. (``np.stack([a, b])`` of traced arrays, the common call here, is
    one pass over its list and no copy.)"""
    seq = _SEQUENCES.get(func, ())
    out = None
    for i, a in enumerate(args):
        new = _argument(func, a, i in seq, f"argument {i}")
        if new is not a:
            if out is None:
                out = list(args)
            out[i] = new
    kw = None
    for k, a in kwargs.items():
        new = _argument(func, a, k in seq, f"{k}=")
        if new is not a:
            if kw is None:
                kw = dict(kwargs)
            kw[k] = new
    return (args if out is None else tuple(out)), (kwargs if kw is None else kw)


def _argument(func, a, sequence: bool, where: str):
    """One argument as a rule may see it (``a`` itself when nothing changes)."""
    t = type(a)
    if t is Fill:  # an array made by np.zeros & co. (engine.fills): what it stands for
        return a.now()
    if t is list or t is tuple:
        if sequence:
            return _items(a, func, func in _NESTED)
        return as_array(a, func, where) if has_tracer(a) else a
    if t is not ndarray and isinstance(a, ndarray):
        refuse_subclass(_name(func), a)
    return a


def _items(seq, func, nested: bool):
    """A sequence of array-likes: each item holding a traced value as a traced array (``seq``
    itself when none is a list or an ndarray subclass)."""
    out = None
    for k, item in enumerate(seq):
        t = type(item)
        if t is ArrayTracer or t is Tracer or t is ndarray or t is float or t is int:
            continue
        new = item
        if t is Fill:
            new = item.now()
        elif (t is list or t is tuple) and has_tracer(item):
            new = _items(item, func, nested) if nested else as_array(item, func, f"item {k} of a sequence")
        elif t is not ndarray and isinstance(item, ndarray):
            refuse_subclass(_name(func), item)
        if new is not item:
            if out is None:
                out = list(seq)
            out[k] = new
    if out is None:
        return seq
    return tuple(out) if type(seq) is tuple else out


def as_array(a, name, where: str):
    """The traced array NumPy would make of the list ``a`` (an argument of ``name``: a function's
    public name, or the function), or a refusal."""
    try:
        return _build(a, None, 0, "np.array")
    except (ValueError, TypeError) as e:
        shown = name if isinstance(name, str) else _name(name)
        raise UnsupportedError(f"{shown}(...) at {user_location(4)}: its {where} is a list or tuple holding traced values "
                               f"that NumPy cannot make one float array of ({str(e).splitlines()[0][:120]}); "
                               "pass an array (np.stack([...]))") from None


def _name(func) -> str:
    module, qualname = names_of(func)
    return f"{module}.{qualname}"


# --- lists holding traced values, built as np.array builds them (engine.lists too) ------------


def _holds_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    if type(obj) is list or type(obj) is tuple:
        return any(_holds_tracer(o) for o in obj)
    return False


def _plain(obj):
    """The same nesting with every traced value replaced by its value (a tuple stays a tuple)."""
    if isinstance(obj, Tracer):
        return obj.value
    if type(obj) is list:
        return [_plain(o) for o in obj]
    if type(obj) is tuple:
        return tuple(_plain(o) for o in obj)
    return obj


def _stack(obj, dtype):
    """A traced array of the nested list ``obj``, every element cast to ``dtype``."""
    if type(obj) is list or type(obj) is tuple:
        return np.stack([_stack(o, dtype) for o in obj])
    if isinstance(obj, Tracer):
        return obj if np.result_type(obj.value) == dtype else obj.astype(dtype)
    return _REAL_ASARRAY(obj, dtype=dtype)


def _build(obj, dtype, ndmin, where: str):
    ref = _REAL_ARRAY(_plain(obj), dtype=dtype)  # NumPy's shape, dtype and errors for these values
    if ref.dtype.kind not in "f":
        raise UnsupportedError(f"{where} of traced values as {ref.dtype}: only float arrays keep a gradient")
    out = _stack(obj, ref.dtype)
    if out.shape != ref.shape:  # pragma: no cover - NumPy's own check above refuses ragged lists
        raise UnsupportedError(f"{where}: nested traced values of shape {out.shape}, NumPy says {ref.shape}")
    if ndmin > out.ndim:
        out = np.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out
