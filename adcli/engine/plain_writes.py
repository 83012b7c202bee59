"""``plain[idx] = t``: a traced value written into a plain float array the differentiated code
computed, such as ``v = x1 * 2.0; v[i] = t`` with ``x1`` left out of argnums.

NumPy would store the bare numbers, so the write used to be refused; with every argument
differentiated, ``v`` is traced and the same program runs. To accept the same NumPy whatever
argnums leaves plain, the write is done as it would be into a traced ``v``, and the name ``v``
is rebound to the traced array, when that is the same program:

* ``v`` is a local of the function writing (not a global, a closure's cell or an attribute), an
  exact ndarray of floats, writable;
* nothing else holds its buffer: no other name, container slot or view holds ``v``, nor the
  array ``v`` views, if any (their reference counts are the ones a lone local and its base have
  on the same path through NumPy, measured once per kind of index by running a constant
  snippet, as ``dispatch._unseen`` does for ``p op= v``);
* the index is an expression with no side effect (names, constants, slices, tuples, arithmetic,
  ``np.array([...])`` of those): it is evaluated again, from the target's source span, to learn
  where the write goes, since NumPy does not hand the index to the value's conversion.

Anything else keeps the refusal (engine.escapes). The write into the traced copy is the engine's
own (engine.mutation), so repeated indices, casting and read-only views behave as for any traced
array. ``v[idx] += t`` (an in-place operator on the plain view ``v[idx]``, then the store) is the
same write: the operator returns the traced sum and the store rebinds ``v``.

Rebinding a local of a running frame uses ``PyFrame_LocalsToFast`` (CPython 3.11 and 3.12) or the
write-through ``frame.f_locals`` of CPython 3.13; elsewhere the write is refused as before.
"""

from __future__ import annotations

import ast
import ctypes
import dis
import linecache
import sys

import numpy as np

from . import lists
from .core import Tracer, make_tracer
from .fills import Fill, constant
from .mutation import copy_keep_layout
from .tape import Tape
from .where import user_frame

ndarray = np.ndarray
_CO_OPTIMIZED = 0x1  # a function's frame: its locals are fast slots


def rebind_store(t: Tracer, hook: str):
    """Do the plain-array store the user's frame is executing (``v[idx] = t``) into a traced copy
    of ``v`` and rebind ``v`` to it. Returns what NumPy should store into the old buffer, which
    the name no longer holds: its own values at ``idx`` (so that nothing a pullback saved from
    it changes); or, when that would not be the same program, a :class:`Refusal` saying why
    (nothing done). ``hook``: the conversion NumPy asked of ``t`` (reference counts differ by path)."""
    frame = user_frame(2)
    if frame is None or not _can_rebind(frame):
        return Refusal("")
    target = _target(frame, frame.f_lasti)
    if type(target) is Refusal:
        return target
    name, index_node = target
    scope = frame.f_locals  # (CPython 3.11/3.12: a snapshot dict kept on the frame, one reference)
    arr = scope.get(name)
    if type(arr) is not ndarray or arr.dtype.kind != "f" or not arr.flags.writeable:
        return Refusal("")
    base = arr.base  # a view is rebound when nothing but it holds the array it views
    if base is not None and type(base) is not ndarray:
        return Refusal("")
    try:
        index = _evaluate(index_node, frame.f_globals, scope)
    except _Impure:
        return INDEX
    key = (_index_kind(index, arr.ndim), type(t), hook, base is not None)
    refs = (sys.getrefcount(arr), sys.getrefcount(base) if base is not None else 0)
    if _CALIBRATING:
        _LONE_REFS[key] = refs
    else:
        lone = _LONE_REFS.get(key)
        if lone is None:
            lone = _calibrate(key, t)
        if lone == (0, 0):  # a path the snippet could not stand for: refused, with no reason to give
            return Refusal("")
        if refs[0] > lone[0] or refs[1] > lone[1]:
            code = frame.f_code
            return ARGUMENT if name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount] else SEEN
    del base
    old = arr[index]
    old = old.copy() if type(old) is ndarray else float(old)
    del arr
    traced = constant(copy_keep_layout(scope[name]), t.tape)
    traced[index] = t  # the engine's write: casting, broadcasting, repeated indices as for any traced array
    _set_local(frame, name, traced)
    return old


def augmented_store(depth: int) -> bool:
    """Whether the user's frame is in ``v[idx] op= t`` between the operator and the store into a
    plain float array ``v``, a local (the operator's result is then stored back into ``v[idx]``,
    where rebind_store takes over, or refuses), or an array made by np.zeros & co. (whose store
    makes it traced)."""
    frame = user_frame(depth + 1)
    if frame is None or not _can_rebind(frame):
        return False
    ops = [ins for ins in dis.get_instructions(frame.f_code) if ins.offset > frame.f_lasti][:3]
    if [ins.opname for ins in ops] != ["SWAP", "SWAP", "STORE_SUBSCR"]:
        return False
    target = _target(frame, ops[2].offset)
    if type(target) is Refusal:
        return False
    arr = frame.f_locals.get(target[0])
    if type(arr) is Fill:  # np.zeros & co.: its own store makes it traced (engine.fills)
        arr = arr.value
    return type(arr) is ndarray and arr.dtype.kind == "f"


# --- the target and its index ---------------------------------------------------------------------


def _can_rebind(frame) -> bool:
    return bool(frame.f_code.co_flags & _CO_OPTIMIZED) and hasattr(frame.f_code, "co_positions") and (
        sys.version_info >= (3, 13) or hasattr(ctypes.pythonapi, "PyFrame_LocalsToFast"))


def _target(frame, offset: int):
    """``(name, index expression)`` of the ``name[index]`` the frame's STORE_SUBSCR at ``offset``
    stores into, or a Refusal."""
    code = frame.f_code
    at = offset // 2
    positions = list(code.co_positions())
    if at >= len(positions):
        return Refusal("")
    line, end_line, col, end_col = positions[at]
    if None in (line, end_line, col, end_col) or line != end_line:
        return Refusal("")
    if next((i.opname for i in dis.get_instructions(code) if i.offset == offset), None) != "STORE_SUBSCR":
        return Refusal("")
    text = linecache.getline(code.co_filename, line)[col:end_col]
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return Refusal("")
    if not isinstance(node, ast.Subscript):
        return Refusal("")
    if not isinstance(node.value, ast.Name):
        return NOT_LOCAL
    name = node.value.id
    if name not in code.co_varnames or name in code.co_cellvars:
        return NOT_LOCAL
    return name, node.slice


class Refusal(str):
    """Why a store was not rebound (words for the error; empty: the generic ones)."""


NOT_LOCAL = Refusal(
    "the array is not a local name of the function writing (an attribute, a global, a closure's variable, an "
    "element of a container): NumPy would store the bare numbers, and adcli cannot rebind that name to a traced "
    "array. Build the array as a local, then store it (v = ...; v[i] = t; obj.v = v)")
SEEN = Refusal(
    "something else holds the array (another name, a container, a closure, or a view taken before this "
    "write) and would keep the bare numbers, losing the gradient. Take views after the traced writes, or make "
    "the array from a traced value (np.zeros_like(x), x.copy())")
ARGUMENT = Refusal(
    "the array is the caller's (an argument left out of argnums): NumPy would store the bare numbers in the "
    "caller's array. Write into a copy (v = x1.copy()), or differentiate that argument too")
INDEX = Refusal(
    "its index is an expression adcli does not evaluate a second time (a call, an attribute), so it cannot "
    "tell where the write goes, and NumPy would store the bare numbers. Compute the index into a local name "
    "first (i = ...; v[i] = t)")


class _Impure(Exception):
    """The index expression might have a side effect (or cannot be evaluated again)."""


_SIMPLE_VALUES = (int, float, bool, slice, type(None), type(Ellipsis), np.integer, np.bool_, ndarray, tuple)
# NumPy's own, and the ones engine.lists puts in their place while a gradient records
_ARRAY_MAKERS = (np.arange, lists.REAL_ARRAY, lists.REAL_ASARRAY, lists.array, lists.asarray)
_COMPARISONS = {ast.Gt: np.greater, ast.GtE: np.greater_equal, ast.Lt: np.less, ast.LtE: np.less_equal,
                ast.Eq: np.equal, ast.NotEq: np.not_equal}


def _evaluate(node, globals_: dict, locals_: dict):
    """The value of an index expression with no side effect; _Impure for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        for scope in (locals_, globals_):
            if node.id in scope:
                value = scope[node.id]
                if isinstance(value, Tracer) or not isinstance(value, _SIMPLE_VALUES + (list,)):
                    raise _Impure
                return value
        raise _Impure
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _evaluate(p, globals_, locals_) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_evaluate(e, globals_, locals_) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, globals_, locals_)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        left, right = _evaluate(node.left, globals_, locals_), _evaluate(node.right, globals_, locals_)
        if not all(isinstance(v, (int, np.integer, ndarray)) for v in (left, right)):
            raise _Impure
        return {ast.Add: lambda: left + right, ast.Sub: lambda: left - right, ast.Mult: lambda: left * right,
                ast.FloorDiv: lambda: left // right, ast.Mod: lambda: left % right}[type(node.op)]()
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
        left, right = _evaluate(node.left, globals_, locals_), _evaluate(node.comparators[0], globals_, locals_)
        if not isinstance(left, ndarray) and not isinstance(right, ndarray):
            raise _Impure  # a bool index is a mask only as an array
        return _COMPARISONS[type(node.ops[0])](left, right)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        module = globals_.get(node.value.id)
        if module is np and node.attr == "newaxis" and node.value.id not in locals_:
            return None
        raise _Impure
    if isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1:
        func = _function(node.func, globals_, locals_)
        if func in _ARRAY_MAKERS:
            return func(_evaluate(node.args[0], globals_, locals_))
    raise _Impure


def _function(node, globals_: dict, locals_: dict):
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id not in locals_:
        if globals_.get(node.value.id) is np:
            return getattr(np, node.attr, None)
    if isinstance(node, ast.Name) and node.id not in locals_:
        return globals_.get(node.id)
    return None


def _index_kind(index, ndim: int) -> str:
    """How NumPy stores through ``index`` (its paths hold different references to the array):
    one element, a basic view, a boolean mask, or integer arrays."""
    parts = index if type(index) is tuple else (index,)
    if all(isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)) for p in parts) \
            and len(parts) == ndim:
        return "element"
    if all(p is None or p is Ellipsis or type(p) is slice or (isinstance(p, (int, np.integer))
                                                              and not isinstance(p, (bool, np.bool_))) for p in parts):
        return "basic"
    if len(parts) == 1 and isinstance(parts[0], ndarray) and parts[0].dtype == bool:
        return "mask"
    if any(p is None or p is Ellipsis or type(p) is slice for p in parts):
        return "mixed"  # integer arrays beside slices: NumPy's mapiter holds a view (subspace)
    return "advanced"


# --- rebinding a frame's local --------------------------------------------------------------------


def _set_local(frame, name: str, value) -> None:
    frame.f_locals[name] = value
    if sys.version_info < (3, 13):
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


# --- the reference count of a lone local, per path --------------------------------------------------

_LONE_REFS: dict = {}
_CALIBRATING = False
_SNIPPET = "def calibrate(t, i, like, view):\n    p = like.copy()[:] if view else like.copy()\n    p[i] = t\n    return p\n"
_SNIPPET_FILE = "<adcli store calibration>"


def _calibrate(key, t: Tracer) -> tuple:
    """The reference count rebind_store sees for a lone local stored into as ``key`` says:
    measured by running the constant snippet above with a value and index of the same kinds."""
    global _CALIBRATING
    kind, value_type, _hook, view = key
    sample = {"element": (1, 1), "basic": (slice(0, 1), slice(0, 1)),
              "mask": np.eye(3, dtype=bool), "advanced": (np.array([0]), np.array([1])),
              "mixed": (np.array([0]), slice(0, 1))}[kind]
    value = t.value
    one = value.ravel()[:1].reshape(()) if isinstance(value, ndarray) and kind in ("element", "mask") else value
    if isinstance(value, ndarray) and kind in ("basic", "advanced", "mixed"):
        one = np.ones((1,) * min(value.ndim, 1 if kind == "advanced" else 2), value.dtype)
    tape = Tape()
    probe = make_tracer(one if value_type is not Tracer else float(np.asarray(value)), tape.leaf(), tape)
    if type(probe) is not value_type:
        return (0, 0)  # a value this snippet cannot stand for: never rebind
    linecache.cache[_SNIPPET_FILE] = (len(_SNIPPET), None, _SNIPPET.splitlines(True), _SNIPPET_FILE)
    scope: dict = {}
    exec(compile(_SNIPPET, _SNIPPET_FILE, "exec"), scope)  # noqa: S102 - our own constant source
    _CALIBRATING = True
    try:
        scope["calibrate"](probe, sample, np.zeros((3, 3)), view)
    except Exception:  # noqa: BLE001 - the path differs from the program's: never rebind on it
        pass
    finally:
        _CALIBRATING = False
        tape.close()
    return _LONE_REFS.setdefault(key, (0, 0))
