"""``np.array([...])`` / ``np.asarray([...])`` of lists holding traced values.

NumPy builds such arrays in C, asking each element for its raw numbers: a traced value would
drop out of the gradient (``Tracer.__array__`` refuses). While a gradient is being recorded,
``numpy.array`` and ``numpy.asarray`` (the module attributes a program reaches as ``np.array``)
are these wrappers: a (nested) list or tuple with a traced value inside is built with traced
``np.stack`` calls instead, with the shape and dtype NumPy itself gives the same list of plain
values (so ragged lists raise NumPy's own error); every other call goes straight to NumPy.

The patch is set when the outermost gradient in the process starts and undone when the last one
ends (a counter under a lock: threads and nested gradients share it); a call made meanwhile by
other code gets NumPy's answer, one isinstance check slower. Not covered: ``from numpy import
array`` done before (that name is NumPy's own function: its error says to use np.stack), and
``order=``, ``subok=``, ``like=`` with traced elements (refused by name).
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import UnsupportedError
from .core import Tracer

_real_array = np.array
_real_asarray = np.asarray
_lock = threading.Lock()
_depth = 0


def _holds_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    if type(obj) is list or type(obj) is tuple:
        return any(_holds_tracer(o) for o in obj)
    return False


def _plain(obj):
    """The same nesting with every traced value replaced by its value."""
    if isinstance(obj, Tracer):
        return obj.value
    if type(obj) is list or type(obj) is tuple:
        return [_plain(o) for o in obj]
    return obj


def _stack(obj, dtype):
    """A traced array of the nested list ``obj``, every element cast to ``dtype``."""
    if type(obj) is list or type(obj) is tuple:
        return np.stack([_stack(o, dtype) for o in obj])
    if isinstance(obj, Tracer):
        return obj if np.result_type(obj.value) == dtype else obj.astype(dtype)
    return _real_asarray(obj, dtype=dtype)


def _build(obj, dtype, ndmin, where: str):
    ref = _real_array(_plain(obj), dtype=dtype)  # NumPy's shape, dtype and errors for these values
    if ref.dtype.kind not in "f":
        raise UnsupportedError(f"{where} of traced values as {ref.dtype}: only float arrays keep a gradient")
    out = _stack(obj, ref.dtype)
    if out.shape != ref.shape:  # pragma: no cover - NumPy's own check above refuses ragged lists
        raise UnsupportedError(f"{where}: nested traced values of shape {out.shape}, NumPy says {ref.shape}")
    if ndmin > out.ndim:
        out = np.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def array(obj, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    if not (type(obj) is list or type(obj) is tuple) or not _holds_tracer(obj):
        return _real_array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, **kwargs)
    if order not in ("K", "A", "C", None) or subok or kwargs:
        raise UnsupportedError("np.array(..., order/subok/like) of a list holding traced values: write np.stack(...)")
    return _build(obj, dtype, ndmin, "np.array")


def asarray(a, dtype=None, order=None, **kwargs):
    if not (type(a) is list or type(a) is tuple) or not _holds_tracer(a):
        return _real_asarray(a, dtype, order, **kwargs)
    if order not in ("K", "A", "C", None) or kwargs:
        raise UnsupportedError("np.asarray(..., order/like) of a list holding traced values: write np.stack(...)")
    return _build(a, dtype, 0, "np.asarray")


array.__doc__ = _real_array.__doc__
asarray.__doc__ = _real_asarray.__doc__


def enter() -> None:
    """A gradient starts: the first one sets the patch."""
    global _depth
    with _lock:
        if _depth == 0 and np.array is _real_array and np.asarray is _real_asarray:
            np.array, np.asarray = array, asarray
        _depth += 1


def leave() -> None:
    """A gradient ends: the last one undoes the patch."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0 and np.array is array and np.asarray is asarray:
            np.array, np.asarray = _real_array, _real_asarray
