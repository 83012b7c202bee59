"""``np.array`` / ``np.asarray`` (and ``asanyarray``, ``ascontiguousarray``,
``asfortranarray``) of traced values and of lists holding them.

NumPy builds arrays from lists in C, asking each element for its raw numbers, and converts an
array-like argument the same way: a traced value would drop out of the gradient
(``Tracer.__array__`` refuses). While a gradient is being recorded, these five ``numpy`` module
attributes (what a program reaches as ``np.array``) are the wrappers below:

* a traced value is treated as NumPy treats an ndarray: ``np.asarray(x)`` (and asanyarray, and
  ascontiguousarray/asfortranarray when the layout already fits) is ``x`` itself, so writes through
  it alias ``x`` as in NumPy; ``np.array(x)`` is a traced copy in ``x``'s layout (``order="K"``),
  ``dtype=`` casts, ``ndmin=`` adds leading axes, ``copy=False`` raises NumPy's own error when a
  copy is needed;
* a (nested) list or tuple with a traced value inside is built with traced ``np.stack`` calls,
  with the shape and dtype NumPy itself gives the same list of plain values (so ragged lists
  raise NumPy's own error);
* every other call goes straight to NumPy.

The patch is set when the outermost gradient in the process starts running its function and
undone when the last one's function returns (a counter under a lock: threads and nested gradients
share it; reverse passes run with NumPy's own functions); a call made meanwhile by other code gets
NumPy's answer, one isinstance check slower. Names bound to NumPy's functions before (``from
numpy import array`` in the program's modules or the differentiated function's globals) are
rebound to the wrappers meanwhile (see ``_rebind``). Not covered: ``order=``, ``subok=``,
``like=`` values other than NumPy's defaults with traced elements (refused by name), and
NumPy's functions held elsewhere than a module's globals (a default argument, an attribute).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from ..errors import TracingError, UnsupportedError
from . import fills
from .containers import _build, _holds_tracer, _plain, as_array
from .core import Tracer
from .escapes import ARRAY_HINT, escape_message
from .library import library_rule, original
from .where import is_user_file

_real_array = np.array
_real_asarray = np.asarray
_real_asanyarray = np.asanyarray
_real_ascontiguousarray = np.ascontiguousarray
_real_asfortranarray = np.asfortranarray
_lock = threading.Lock()
_depth = 0


# Library code (NumPy's and SciPy's own modules) that converts its array-like arguments and hands
# them to compiled code. A traced value reaching a conversion from there was not seen by any rule:
# a list the dispatch protocol does not look into (np.meshgrid([a, b], ...)), or a SciPy function
# without a rule. Given a tracer, such a body fails somewhere inside with an error of its own.
_LIBRARY_BODIES = ("numpy._core.", "numpy.lib.", "numpy.linalg.", "numpy.fft.", "numpy.random.", "scipy.")


def _library_caller(bare: bool, depth: int = 2) -> bool:
    """Whether the conversion was called from library code that cannot carry a tracer: a bare
    traced value from SciPy's modules, a list holding one from NumPy's or SciPy's (NumPy's own
    Python functions that receive a bare traced value were dispatched to a rule, or are pure
    array code such as numpy.polynomial's, which records as it runs)."""
    module = sys._getframe(depth).f_globals.get("__name__", "")
    return module.startswith("scipy.") if bare else module.startswith(_LIBRARY_BODIES)


def _refuse_library(what: str) -> TracingError:
    return TracingError(escape_message(f"{what} (inside a library function)", ARRAY_HINT + (
        "; for a list of traced values, pass np.array([...]) or np.stack([...]) of it instead of the list")))


def array(obj, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    if isinstance(obj, Tracer) and not kwargs and order in ("K", "A", "C", "F", None):
        if _library_caller(True):
            raise _refuse_library("np.array")
        return _of_tracer(obj, dtype, copy, order, ndmin)
    if not (type(obj) is list or type(obj) is tuple) or not _holds_tracer(obj):
        return _real_array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, **kwargs)
    if _library_caller(False):
        raise _refuse_library("np.array")
    if order not in ("K", "A", "C", None) or subok or kwargs:
        raise UnsupportedError("np.array(..., order/subok/like) of a list holding traced values: write np.stack(...)")
    return _build(obj, dtype, ndmin, "np.array")


def _of_tracer(t: Tracer, dtype, copy, order, ndmin=0):
    """np.array / np.asarray of a traced value, as NumPy treats an ndarray: the value itself when
    nothing has to change (``copy=False``/``None``), else a traced copy in ``order``."""
    copy = {np._CopyMode.ALWAYS: True, np._CopyMode.IF_NEEDED: None, np._CopyMode.NEVER: False}.get(copy, copy) \
        if isinstance(copy, np._CopyMode) else copy
    out = t
    if dtype is not None and np.dtype(dtype) != np.result_type(t.value):
        out = t.astype(dtype)  # a new array already
        copy = False if copy else copy
    if np.ndim(out.value) < ndmin:
        out = np.reshape(out, (1,) * (ndmin - np.ndim(out.value)) + np.shape(out.value))
    order = "K" if order in (None, "A") else order
    v = out.value
    needs = type(v) is np.ndarray and ((order == "C" and not v.flags.c_contiguous) or
                                      (order == "F" and not v.flags.f_contiguous))
    if copy is False and needs:
        raise ValueError("Unable to avoid copy while creating an array as requested.")  # NumPy's own
    if copy or needs:
        out = out.copy(order=order) if type(v) is np.ndarray else out * 1.0
    return out


def asarray(a, dtype=None, order=None, **kwargs):
    if isinstance(a, Tracer) and not kwargs and order in ("K", "A", "C", "F", None):
        if _library_caller(True):
            raise _refuse_library("np.asarray")
        return _of_tracer(a, dtype, None, order)
    if not (type(a) is list or type(a) is tuple) or not _holds_tracer(a):
        return _real_asarray(a, dtype, order, **kwargs)
    if _library_caller(False):
        raise _refuse_library("np.asarray")
    if order not in ("K", "A", "C", None) or kwargs:
        raise UnsupportedError("np.asarray(..., order/like) of a list holding traced values: write np.stack(...)")
    return _build(a, dtype, 0, "np.asarray")


def _as_traced(a, dtype, where: str):
    """A traced value itself (NumPy returns the array itself when nothing changes), cast to
    ``dtype``; a list holding traced values built as np.array would."""
    if _library_caller(isinstance(a, Tracer), 3):
        raise _refuse_library(where)
    if isinstance(a, Tracer):
        return _of_tracer(a, dtype, None, "K")
    return _build(a, dtype, 0, where)


def traced_list(a):
    """A (nested) list or tuple holding traced values, built as np.array would build it (traced);
    anything else unchanged. For array-like arguments NumPy converts in C (engine.derive,
    engine/rules/reductions.py)."""
    if (type(a) is list or type(a) is tuple) and _holds_tracer(a):
        return array(a)
    return a


def _traced_arg(a) -> bool:
    return isinstance(a, Tracer) or ((type(a) is list or type(a) is tuple) and _holds_tracer(a))


def asanyarray(a, dtype=None, order=None, **kwargs):
    if not _traced_arg(a) or kwargs or order not in (None, "K", "A", "C"):
        return _real_asanyarray(a, dtype, order, **kwargs)
    return _as_traced(a, dtype, "np.asanyarray")


def ascontiguousarray(a, dtype=None, **kwargs):
    if not _traced_arg(a) or kwargs:
        return _real_ascontiguousarray(a, dtype, **kwargs)
    out = _as_traced(a, dtype, "np.ascontiguousarray")
    if np.ndim(out.value) == 0:
        return np.reshape(out, (1,))  # NumPy's: at least one dimension
    return out if out.value.flags.c_contiguous else out.copy(order="C")


def asfortranarray(a, dtype=None, **kwargs):
    if not _traced_arg(a) or kwargs:
        return _real_asfortranarray(a, dtype, **kwargs)
    out = _as_traced(a, dtype, "np.asfortranarray")
    if np.ndim(out.value) == 0:
        return np.reshape(out, (1,))
    return out if out.value.flags.f_contiguous else out.copy(order="F")


def _join(real):
    """``np.concatenate`` & co. of a sequence whose traced values sit only inside nested lists
    (``np.column_stack([x, [t0, t1]])`` with x plain): NumPy hands a call to the engine only for
    a traced element, so such lists are first made the traced arrays np.array makes of them."""

    def join(arrays, *args, **kwargs):
        if (type(arrays) is list or type(arrays) is tuple) and _nested_only(arrays):
            arrays = [as_array(a, real, "sequence") if (type(a) is list or type(a) is tuple) and _holds_tracer(a)
                      else a for a in arrays]
        return real(arrays, *args, **kwargs)

    join.__name__, join.__qualname__, join.__doc__ = real.__name__, real.__name__, real.__doc__
    return join


def _nested_only(arrays) -> bool:
    nested = False
    for a in arrays:
        if isinstance(a, Tracer):
            return False  # NumPy dispatches to the engine, whose rules open the lists
        if (type(a) is list or type(a) is tuple) and _holds_tracer(a):
            nested = True
    return nested


_JOINS = {f.__name__: f for f in (np.concatenate, np.stack, np.hstack, np.vstack, np.dstack, np.column_stack)}
array.__doc__ = _real_array.__doc__
asarray.__doc__ = _real_asarray.__doc__
asanyarray.__doc__ = _real_asanyarray.__doc__
ascontiguousarray.__doc__ = _real_ascontiguousarray.__doc__
asfortranarray.__doc__ = _real_asfortranarray.__doc__
_REAL = {"array": _real_array, "asarray": _real_asarray, "asanyarray": _real_asanyarray,
         "ascontiguousarray": _real_ascontiguousarray, "asfortranarray": _real_asfortranarray, **fills.REAL, **_JOINS}
_OURS = {"array": array, "asarray": asarray, "asanyarray": asanyarray, "ascontiguousarray": ascontiguousarray,
         "asfortranarray": asfortranarray, **fills.CONSTRUCTORS,  # np.zeros & co.: engine.fills
         **{name: _join(real) for name, real in _JOINS.items()}}
_NUMPY = vars(np)
REAL_ARRAY, REAL_ASARRAY = _real_array, _real_asarray


def enter(scope: dict | None = None) -> None:
    """A gradient starts: the first one sets the patch (one update of NumPy's namespace, unless
    something else replaced ``np.array`` meanwhile: then it is left alone), and rebinds the
    names the program's own modules bound to NumPy's five functions (``from numpy import
    array``) and those of ``scope`` (the differentiated function's globals)."""
    global _depth
    with _lock:
        if _depth == 0:
            if _NUMPY.get("array") is _real_array:
                _NUMPY.update(_OURS)
            _rebind(scope)
        _depth += 1


def leave() -> None:
    """A gradient ends: the last one undoes the patch."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            if _NUMPY.get("array") is array:
                _NUMPY.update(_REAL)
            for namespace, name, real in _rebound:
                if namespace.get(name) is _OURS_BY_REAL[id(real)]:
                    namespace[name] = real
            _rebound.clear()


# --- ``from numpy import array`` in the program's own modules --------------------------------
#
# A name bound before the gradient (``from numpy import array, asarray``, or a module that
# re-exports NumPy's names) holds NumPy's own function, which the namespace patch above does not
# reach. While a gradient records, such names in the program's modules (their files outside the
# installed libraries and the standard library, or ``__main__``) and in the differentiated
# function's globals are bound to the wrappers too, and put back after. The modules are scanned
# when new ones were loaded (a count of sys.modules, as engine.library does); a gradient then
# rebinds the few names found, usually none.

_OURS_BY_REAL = {id(_REAL[k]): _OURS[k] for k in _REAL}
_REAL_BY_OURS = {id(_OURS[k]): _REAL[k] for k in _REAL}


def numpy_function(func):
    """NumPy's own function for one of the wrappers above (what ``np.stack`` names while a
    gradient runs), else ``func`` itself: for code that classifies a callable it found in a
    module's globals (adcli.synth, which may read a function's globals inside a gradient)."""
    return _REAL_BY_OURS.get(id(func), func)


def list_aware(func):
    """The engine's version of ``np.array``, ``np.asarray`` & co. (a list of traced values made
    one traced array) for NumPy's own function, else ``func`` itself: for a caller that holds
    NumPy's function object and calls it inside a gradient (a synthesized rule's call_vjp)."""
    return _OURS_BY_REAL.get(id(func), func)
_rebound: list = []  # (namespace, name, NumPy's function) rebound by the running gradient
_bindings: dict = {}  # id(namespace) -> [namespace, its size when scanned, [names bound to NumPy's functions]]
_found: list = []  # the entries of _bindings with names to rebind
_modules_seen = 0


def _scan(namespace: dict) -> list:
    return [k for k, v in list(namespace.items()) if id(v) in _OURS_BY_REAL and _REAL.get(getattr(v, "__name__", ""))
            is v]


def _is_users(namespace: dict) -> bool:
    """A module namespace of the program's own (exec'd code and ``__main__`` without a file too)."""
    path = namespace.get("__file__")
    if path is None:
        name = namespace.get("__name__", "")
        return isinstance(name, str) and not name.startswith(("numpy", "scipy", "adcli"))
    return isinstance(path, str) and is_user_file(path)


def _user_modules():
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is dict and "__file__" in namespace and _is_users(namespace):
            yield namespace


def _rebind(scope: dict | None) -> None:
    global _modules_seen
    if len(sys.modules) != _modules_seen:  # modules loaded since: scan them all again
        _modules_seen = len(sys.modules)
        _bindings.clear()
        for namespace in _user_modules():
            _bindings[id(namespace)] = [namespace, len(namespace), _scan(namespace)]
        _found[:] = [entry for entry in _bindings.values() if entry[2]]
    found = _found
    if scope is not None:  # the differentiated function's globals: again when names were bound since
        entry = _bindings.get(id(scope))
        if entry is None or entry[0] is not scope:
            entry = _bindings[id(scope)] = [scope, len(scope), _scan(scope) if _is_users(scope) else []]
            if entry[2]:
                _found.append(entry)
        elif len(scope) != entry[1]:  # (from numpy import array after a first gradient)
            had = bool(entry[2])
            entry[1], entry[2] = len(scope), _scan(scope) if _is_users(scope) else []
            if entry[2] and not had:
                _found.append(entry)
    for namespace, _, names in found:
        for name in names:
            real = namespace.get(name)
            if real is not None and id(real) in _OURS_BY_REAL and _REAL.get(real.__name__) is real:
                namespace[name] = _OURS_BY_REAL[id(real)]
                _rebound.append((namespace, name, real))


# --- np.r_[...] and np.c_[...] of traced values ------------------------------------------------


@library_rule("numpy.lib._index_tricks_impl.AxisConcatenator.__getitem__", shown="numpy.AxisConcatenator.__getitem__",
              own=("key",))
def _concatenator(self, key):
    """``np.r_[a, 1.0, b]`` / ``np.c_[a, b]`` (a library dispatch point, engine.library): NumPy's
    own steps (each item made at least ``ndmin``-d, 1-d items turned by ``trans1d``, all cast to
    NumPy's result dtype, concatenated along ``axis``) done with traced operations; NumPy's
    answer for the plain values fixes the shape and dtype, and raises its own errors."""
    items = key if isinstance(key, tuple) else (key,)
    if self.matrix or any(isinstance(k, str) and k in ("r", "c") for k in items):
        raise UnsupportedError("np.r_/np.c_ matrix directives ('r', 'c') with traced values are not supported")
    ref = original("numpy.lib._index_tricks_impl.AxisConcatenator.__getitem__")(self, _plain(key))
    axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
    objs = []
    for k, item in enumerate(items):
        if isinstance(item, str):  # "axis,ndmin[,trans1d]" or "axis", first entry only (NumPy checked)
            parts = [int(p) for p in item.split(",")]
            axis = parts[0]
            if len(parts) > 1:
                ndmin = parts[1]
            if len(parts) > 2:
                trans1d = parts[2]
            continue
        if isinstance(item, slice) or not isinstance(item, Tracer):
            objs.append(_real_array(self[item], dtype=ref.dtype, ndmin=ndmin) if isinstance(item, slice)
                        else _real_array(item, dtype=ref.dtype, ndmin=ndmin))
            if not isinstance(item, slice) and trans1d != -1 and np.ndim(item) < ndmin:
                objs[-1] = objs[-1].transpose(_turn(np.ndim(item), ndmin, trans1d))
            continue
        n = np.ndim(item.value)
        obj = item if np.result_type(item.value) == ref.dtype else item.astype(ref.dtype)
        if n < ndmin:
            obj = np.reshape(obj, (1,) * (ndmin - n) + np.shape(item.value))
            if trans1d != -1:
                obj = np.transpose(obj, _turn(n, ndmin, trans1d))
        objs.append(obj)
    out = np.concatenate(objs, axis=axis)
    if out.shape != ref.shape:  # pragma: no cover - the steps above are NumPy's
        raise UnsupportedError(f"np.r_/np.c_ of traced values: shape {out.shape}, NumPy says {ref.shape}")
    return out


def _turn(item_ndim: int, ndmin: int, trans1d: int) -> list:
    """The axes NumPy's concatenators transpose an item of fewer than ndmin dimensions by."""
    k2 = ndmin - item_ndim
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return axes[:k1] + axes[k2:] + axes[k1:k2]
