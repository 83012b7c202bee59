"""Arrays the differentiated code makes with NumPy's constructors, filled with traced values:
``y = np.zeros(n); y[i] = f(x[i])``, the way scientists fill arrays.

A plain ndarray cannot hold a traced value (NumPy would store the bare number: the engine
refuses the write). So while a gradient records, ``np.zeros``, ``np.ones``, ``np.empty``,
``np.full`` and their ``*_like`` forms of plain prototypes, called from the program's own code
with a float dtype, return a :class:`Fill`: the NumPy array, wrapped.

* **Until a traced value is written into it** a Fill is its array: every operator, method,
  attribute and NumPy function is the array's own, on the array's memory (results are plain
  arrays, ``float(y[0])`` is a number, writes of plain values land in place). Only ``type(y)``
  and ``isinstance(y, np.ndarray)`` tell it apart.
* **A traced write** (``y[i] = t``, ``y += t``, ``np.copyto(y, t)``, a ufunc's ``out=y``) makes
  it a traced array: a constant node on the writer's tape (its cotangent goes nowhere), then the
  write as into any traced array (engine.mutation). From then on the Fill stands for that
  tracer: every use is the tracer's (and an escape, ``float(y[0])``, is refused as for any).
* **Aliases.** A view or alias of the plain array taken before the first traced write would not
  see it (NumPy's would): such a write is refused, naming the line, instead.

The engine's own entry points (operators of a tracer, ``__array_ufunc__``,
``__array_function__``, assignment) unwrap a Fill to what it stands for before a rule sees it
(:func:`unfill`). The cost, for code that never writes a traced value into such an array, is a
Python call per use of it (see docs/engine.md).
"""

from __future__ import annotations

import linecache
import sys

import numpy as np

from ..errors import TracingError
from . import core
from .core import Tracer, make_tracer, node_kind
from .tape import Tape, no_parents
from .where import is_user_file, user_location

ndarray = np.ndarray


@node_kind(output=None, parents=no_parents)
def pb_const(node, g, acc):
    """A constant the differentiated code made (below): its cotangent goes nowhere."""


def constant(value, tape: Tape) -> Tracer:
    """``value`` as a traced array on ``tape`` that depends on nothing (a node of its own kind,
    not a leaf: writes into it are allowed, and nothing flows back from it)."""
    nodes = tape.nodes
    nodes.append((pb_const,))
    return make_tracer(value, len(nodes) - 1, tape)


class Fill:
    """An array made by a NumPy constructor in the differentiated code: its plain ``value``
    until a traced value is written into it, then its ``tracer`` (see module doc)."""

    __slots__ = ("value", "tracer", "__weakref__")
    __array_priority__ = 50.0  # below a tracer's, above an ndarray's
    _adcli_fill = True  # (engine.descriptors describes it as what it stands for)

    def __init__(self, value: ndarray) -> None:
        self.value = value
        self.tracer = None

    def now(self):
        """What the array is now: its tracer, or its plain value."""
        return self.tracer if self.tracer is not None else self.value

    def promote(self, tape) -> Tracer:
        """Become a traced array on ``tape`` (a constant: nothing flows back from it)."""
        if self.tracer is None:
            if sys.getrefcount(self.value) > 2:  # this slot and the argument: anything more is an alias or a view
                raise TracingError(
                    f"writing a traced value into an array made with a NumPy constructor at {user_location(3)}, "
                    "of which a view or another reference was taken before: that one would keep the bare "
                    "numbers. Take views after the traced writes, or make the array from a traced value "
                    "(np.zeros_like(x))")
            self.tracer = constant(self.value, tape)
            self.value = None
        return self.tracer

    # --- the NumPy protocols ---------------------------------------------------------------

    def __array__(self, dtype=None, copy=None):
        if self.tracer is not None:
            return self.tracer.__array__(dtype, copy)  # an escape: refused as for any tracer
        v = self.value
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        return v.copy() if copy else v

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        outs = promote_outputs(inputs, kwargs)
        result = getattr(ufunc, method)(*unfill(inputs), **unfill(kwargs))
        if len(outs) == 1 and type(outs[0]) is Fill:
            return outs[0]
        return result

    def __array_function__(self, func, types, args, kwargs):
        if func in _WRITES and args and type(args[0]) is Fill and args[0].tracer is None:
            tape = _tape_of((args[1:], kwargs))
            if tape is not None:
                args[0].promote(tape)
        result = func(*unfill(args), **unfill(kwargs))
        return None if func in _WRITES else result

    # --- writes ----------------------------------------------------------------------------

    def __getitem__(self, idx):
        # the most frequent use (c[i] in a loop): inline, without the generic forwarding
        t = self.tracer
        if t is None:
            return self.value[idx if type(idx) is int else unfill(idx)]
        return t[unfill(idx)]

    def __setitem__(self, idx, v) -> None:
        if self.tracer is None:
            tv = type(v)
            if tv is float or tv is int:  # a plain number (the common plain write): no tape to look for
                self.value[idx] = v
                return
            tape = _tape_of(v)
            if tape is None:
                self.value[idx] = unfill(v)
                return
            self.promote(tape)
        self.tracer[idx] = unfill(v)

    def __repr__(self) -> str:
        return repr(self.now())


_WRITES = frozenset({np.copyto, np.put, np.place, np.putmask, np.fill_diagonal})
_IN_PLACE = ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
             "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__")
_OWN = frozenset({
    "__class__", "__new__", "__init__", "__getattribute__", "__setattr__", "__delattr__", "__init_subclass__",
    "__subclasshook__", "__reduce__", "__reduce_ex__", "__array_ufunc__", "__array_function__", "__array__",
    "__array_finalize__", "__array_wrap__", "__array_interface__", "__array_struct__", "__array_priority__",
    "__class_getitem__", "__dir__", "__sizeof__", "__hash__", "__setstate__", "__getstate__", "__setitem__",
    "__repr__", "__getitem__", "__dlpack__", "__dlpack_device__", "__buffer__", "__release_buffer__", "__doc__",
    "__array_namespace__",
})


def _method(name: str):
    def method(self, *args, **kwargs):
        target = self.tracer if self.tracer is not None else self.value
        if not args and not kwargs:
            return getattr(target, name)()
        return getattr(target, name)(*unfill(args), **unfill(kwargs))

    method.__name__ = name
    return method


def _in_place(name: str):
    def method(self, other):
        if self.tracer is None:
            tape = _tape_of(other)
            if tape is None:
                result = getattr(self.value, name)(unfill(other))
                return NotImplemented if result is NotImplemented else self
            self.promote(tape)
        result = getattr(self.tracer, name)(unfill(other))
        if isinstance(result, Tracer) and result is not self.tracer:
            self.tracer = result
        return NotImplemented if result is NotImplemented else self

    method.__name__ = name
    return method


def _attribute(name: str):
    def get(self):
        return getattr(self.now(), name)

    def put(self, v):
        setattr(self.now(), name, v)

    return property(get, put)


for _name, _attr in vars(ndarray).items():
    if _name in _OWN:
        continue
    if _name in _IN_PLACE:
        setattr(Fill, _name, _in_place(_name))
    elif callable(_attr):
        setattr(Fill, _name, _method(_name))
    else:
        setattr(Fill, _name, _attribute(_name))
for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__", "__int__",
              "__index__", "__complex__", "__str__", "__format__", "__len__", "__iter__", "__contains__"):
    if _name in vars(ndarray) or hasattr(ndarray, _name):
        setattr(Fill, _name, _method(_name))


# --- finding tapes and unwrapping ------------------------------------------------------------


def _tape_of(obj):
    """The tape of the first traced value in ``obj`` (a tracer, a Fill standing for one, or a
    list, tuple or dict holding one), or None."""
    if isinstance(obj, Tracer):
        return obj.tape
    t = type(obj)
    if t is Fill:
        return obj.tracer.tape if obj.tracer is not None else None
    if t is list or t is tuple:
        for v in obj:
            tape = _tape_of(v)
            if tape is not None:
                return tape
    elif t is dict:
        return _tape_of(tuple(obj.values()))
    return None


def promote_outputs(inputs: tuple, kwargs: dict) -> tuple:
    """A ufunc's ``out=`` arrays; a Fill among them is made traced when a traced value is among
    the inputs (the ufunc writes one into it)."""
    out = kwargs.get("out")
    outs = out if type(out) is tuple else () if out is None else (out,)
    if any(type(o) is Fill and o.tracer is None for o in outs):
        tape = _tape_of(inputs)
        if tape is not None:
            for o in outs:
                if type(o) is Fill:
                    o.promote(tape)
    return outs


def unfill(obj):
    """``obj`` with every Fill replaced by what it stands for (lists, tuples and dicts looked
    into); ``obj`` itself when it holds none (no copy: ufunc_call and the dispatch points ask
    this of every call's arguments)."""
    t = type(obj)
    if t is Fill:
        return obj.now()
    if t is tuple or t is list:
        out = None
        for k, v in enumerate(obj):  # (a loop, not any() of a generator)
            tv = type(v)
            if tv is Fill or tv is list or tv is tuple or tv is dict:
                new = unfill(v)
                if new is not v:
                    if out is None:
                        out = list(obj)
                    out[k] = new
        return obj if out is None else (out if t is list else tuple(out))
    if t is dict:
        changed = None
        for k, v in obj.items():
            tv = type(v)
            if tv is Fill or tv is list or tv is tuple or tv is dict:
                new = unfill(v)
                if new is not v:
                    if changed is None:
                        changed = dict(obj)
                    changed[k] = new
        return obj if changed is None else changed
    return obj


# --- the constructors ------------------------------------------------------------------------

_real = {name: getattr(np, name) for name in ("zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                                               "empty_like", "full_like")}
_users: dict = {}  # code object -> whether it is the program's own
_callees: dict = {}  # (code object, instruction offset) -> the callee as written there, or None


def _called_by_user(constructor) -> bool:
    """Whether the program's own Python code called ``constructor`` itself. The nearest Python
    frame is not enough: NumPy's and SciPy's compiled code (a random generator's ``uniform``)
    calls ``np.empty`` through the module attribute without a frame of its own, and a Fill
    handed to compiled code that expects an ndarray would be read as one. So the call the
    user's frame is executing must name the constructor: its callee, as written
    (``np.zeros``, ``zeros``), resolved in the frame's names, is ``constructor``."""
    frame = sys._getframe(2)  # the program's own (the constructor checked)
    key = (frame.f_code, frame.f_lasti)
    callee = _callees.get(key, False)
    if callee is False:
        callee = _callees[key] = _callee(frame)
    if callee is None:
        return False
    first, *rest = callee
    obj = frame.f_locals.get(first, frame.f_globals.get(first))
    for attr in rest:
        obj = getattr(obj, attr, None)
    return obj is constructor


def _callee(frame) -> tuple | None:
    """The dotted name the frame's current call is made through (``("np", "zeros")``), from its
    source span; None when it is not a plain dotted name (or the source is unknown)."""
    try:
        positions = list(frame.f_code.co_positions())
        pos = positions[frame.f_lasti // 2]
    except (AttributeError, IndexError):  # pragma: no cover - Python < 3.11: no positions
        return None
    if pos is None or pos[0] is None or pos[2] is None:
        return None
    text = linecache.getline(frame.f_code.co_filename, pos[0])[pos[2]:]
    name = text.split("(", 1)[0].strip()
    parts = tuple(name.split("."))
    return parts if name and all(p.isidentifier() for p in parts) else None


def _wrap(name: str, real):
    like = name.endswith("_like")
    full = name.startswith("full")

    def constructor(*args, **kwargs):
        # the engine's own rules (np.empty_like in a forward pass), NumPy's and SciPy's Python
        # code, and a rule's forward pass (_suspended) get NumPy's array at once: one dict lookup
        code = sys._getframe(1).f_code
        mine = _users.get(code)
        if mine is None:
            mine = _users[code] = is_user_file(code.co_filename)
        if not mine or _suspended:
            return real(*args, **kwargs)
        if like and args and (isinstance(args[0], Tracer) or (type(args[0]) is Fill and args[0].tracer is not None)):
            return real(*unfill(args), **unfill(kwargs))  # a traced prototype: the rule's
        fill = (args[1] if len(args) > 1 else kwargs.get("fill_value")) if full else None
        if full and _tape_of(fill) is not None:  # np.full(n, t): t's value everywhere, traced
            value = core.unwrap(unfill(fill))
            given = list(args)
            given[1:2] = [np.zeros_like(value)] if len(args) > 1 else []
            plain = {**kwargs, "fill_value": np.zeros_like(value)} if "fill_value" in kwargs else kwargs
            out = Fill(real(*unfill(given), **unfill(plain)))
            out[...] = fill
            return out
        result = real(*unfill(args), **unfill(kwargs))
        if type(result) is ndarray and result.dtype.kind == "f" and _called_by_user(constructor):
            return Fill(result)
        return result

    constructor.__name__ = real.__name__
    constructor.__qualname__ = real.__name__
    constructor.__doc__ = real.__doc__
    constructor.__wrapped__ = real
    return constructor


_suspended = 0  # rule forward passes running (they compute on plain values: NumPy's arrays)


def call_plain(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with NumPy's own constructors: a rule's forward pass (engine.rules'
    declared rules, user code like any other) computes on plain values and returns plain arrays."""
    global _suspended
    _suspended += 1
    try:
        return fn(*args, **kwargs)
    finally:
        _suspended -= 1


CONSTRUCTORS = {name: _wrap(name, real) for name, real in _real.items()}
REAL = dict(_real)
core.FILL = Fill
