"""The ndarray-like surface of :class:`Tracer`: operators, NumPy protocols, methods and the
escape routes that must raise. Dunders only dispatch: unwrap, look up, call."""

from __future__ import annotations

import math
import operator

import numpy as np

from ..errors import TracingError, UnsupportedError
from . import mutation
from .core import _SHAPE_ONLY_MIN, ArrayTracer, Tracer, _new, apply1, apply2, passes, pb_binary, pb_passes, pb_unary, unary_node
from .dispatch import array_function, ufunc_call
from .escapes import ARRAY_CONVERSION, ARRAY_HINT, NUMBER_HINT, escape_message
from .plain_writes import Refusal, rebind_store
from .registry import FAST_UFUNCS, METHODS, OPERATORS
from .where import user_instruction, user_location

ndarray = np.ndarray

# the rules the surface binds, found in the registry (engine/rules/ filled it first: engine/__init__)
ADD, SUBTRACT, MULTIPLY, DIVIDE = (OPERATORS[op] for op in (operator.add, operator.sub, operator.mul, operator.truediv))
POWER, REMAINDER, NEGATIVE, POSITIVE = (OPERATORS[op] for op in (operator.pow, operator.mod, operator.neg, operator.pos))
ABSOLUTE = OPERATORS[operator.abs]
reshape, transpose, astype, copy_method = (METHODS[m] for m in ("reshape", "transpose", "astype", "copy"))


def _binary(prim):
    """The operator and its reflection. Numbers (the scalar loops) take an inline path: the node
    apply2 would record, without its call and its array checks (a shorter forward pass per
    iteration of sum_loop_1000: docs/engine.md § Measurements behind the code); everything else
    goes to apply2."""
    fwd = prim.fwd
    kind = pb_passes if prim.vjps == (passes, passes) else pb_binary  # x + y: the cotangent passes on

    def op(self, other):
        if type(self) is Tracer:  # a number: ArrayTracer holds arrays
            to = type(other)
            if to is Tracer:
                tape = self.tape
                if other.tape is tape:
                    av, bv = self.value, other.value
                    ans = fwd(av, bv)
                    if type(ans) is not ndarray:
                        nodes = tape.nodes
                        nodes.append((kind, prim, (self.idx, other.idx), ans, av, bv))
                        t = _new(Tracer)
                        t.value, t.idx, t.tape = ans, len(nodes) - 1, tape
                        return t
            elif to is float or to is int:
                av = self.value
                ans = fwd(av, other)
                if type(ans) is not ndarray:
                    tape = self.tape
                    nodes = tape.nodes
                    nodes.append((kind, prim, (self.idx, None), ans, av, other))
                    t = _new(Tracer)
                    t.value, t.idx, t.tape = ans, len(nodes) - 1, tape
                    return t
        return apply2(prim, self, other)

    def rop(self, other):
        if type(self) is Tracer and (type(other) is float or type(other) is int):
            bv = self.value
            ans = fwd(other, bv)
            if type(ans) is not ndarray:
                tape = self.tape
                nodes = tape.nodes
                nodes.append((kind, prim, (None, self.idx), ans, other, bv))
                t = _new(Tracer)
                t.value, t.idx, t.tape = ans, len(nodes) - 1, tape
                return t
        return apply2(prim, other, self)

    return op, rop


def _compare(ufunc):
    def op(self, other):
        return ufunc(self.value, other.value if isinstance(other, Tracer) else other)

    return op


def _inplace(op):
    def iop(self, other):
        return mutation.inplace(self, op, other)

    return iop


def _escape(what: str, hint: str):
    def refuse(self, *args, **kwargs):
        self.tape.refuse_if_closed()  # a value kept from a finished gradient: say that, whatever reads it
        if what in _STORED and user_instruction(1) == "STORE_SUBSCR":
            old = rebind_store(self, what)
            if type(old) is not Refusal:  # stored into a traced copy; NumPy writes the old values back (engine.plain_writes)
                return _STORED[what](old, *args)
            raise TracingError(escape_message(what, hint, old))
        raise TracingError(escape_message(what, hint))

    return refuse


def _as_array(value, dtype=None, copy=None):
    return np.asarray(value, dtype)


# the conversions NumPy asks of a value stored into a float array, and what they give
_STORED = {"float()": float, ARRAY_CONVERSION: _as_array}


def _array_number(what: str, convert):
    escape = _escape(what, NUMBER_HINT)

    def number(self):
        self.tape.refuse_if_closed()
        if user_instruction(1) == "STORE_SUBSCR" and np.ndim(self.value) == 0:
            old = rebind_store(self, what)
            if type(old) is not Refusal:
                return convert(old)
            # plain[i] = t for a traced 0-d array: NumPy takes anything with __getitem__ for a
            # sequence and replaces any error raised here by its own "setting an array element
            # with a sequence". So the number is stored, and adcli's error is raised when the
            # differentiated function returns (never a silently lost gradient).
            if self.tape.escape is None:
                self.tape.escape = TracingError(escape_message(what, NUMBER_HINT, old) + " (raised when the function returned)")
            return convert(self.value)
        return escape(self)

    return number


def _refuse_hash(self):
    raise TracingError(
        f"hash() of a traced value at {user_location(2)} (used as a dict key or set member?): an equal value "
        "found by lookup would stand in for this one and the gradient would go to the wrong value. Use a plain "
        "key instead (adcli.stop_gradient(x), or the integer index x came from)"
    )


def _install() -> None:
    T = Tracer
    for name, prim in (("add", ADD), ("sub", SUBTRACT), ("mul", MULTIPLY), ("truediv", DIVIDE),
                       ("pow", POWER), ("mod", REMAINDER)):
        op, rop = _binary(prim)
        setattr(T, f"__{name}__", op)
        setattr(T, f"__r{name}__", rop)
        # a number is immutable: ``y += v`` rebinds y (the loops of scalar operations take
        # this path); an array keeps NumPy's in-place semantics (mutation.inplace)
        setattr(T, f"__i{name}__", op)
        setattr(ArrayTracer, f"__i{name}__", _inplace(op))
    T.__matmul__ = lambda self, other: np.matmul(self, other)
    T.__rmatmul__ = lambda self, other: np.matmul(other, self)
    T.__imatmul__ = _inplace(T.__matmul__)
    # piecewise constant (a plain result), computed by Python's operator as on the plain values:
    # a traced Python float // 0.7 is a Python float, not an np.float64 (NumPy 2 promotes float32
    # arrays with the latter, not the former)
    T.__floordiv__ = lambda self, other: self.value // (other.value if isinstance(other, Tracer) else other)
    T.__rfloordiv__ = lambda self, other: other // self.value
    T.__neg__ = lambda self: apply1(NEGATIVE, self)
    T.__pos__ = lambda self: apply1(POSITIVE, self)
    T.__abs__ = lambda self: apply1(ABSOLUTE, self)
    for name, uf in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                     ("eq", np.equal), ("ne", np.not_equal)):
        setattr(T, f"__{name}__", _compare(uf))
    # NumPy scalars are hashable, but a traced number as a dict key or set member would let an
    # equal value found by lookup stand in for this one, and the gradient would go to the wrong
    # value (memoisation by value). Arrays are unhashable, as ndarrays are.
    T.__hash__ = _refuse_hash
    ArrayTracer.__hash__ = None
    T.__divmod__ = lambda self, other: (self // other, self % other)
    T.__rdivmod__ = lambda self, other: (other // self, other % self)
    # math.trunc / floor / ceil are piecewise constant (zero derivative), like np.trunc: a plain
    # result is exact. Arrays of more than one element raise NumPy's own TypeError.
    T.__trunc__ = lambda self: math.trunc(self.value)
    T.__floor__ = lambda self: math.floor(self.value)
    T.__ceil__ = lambda self: math.ceil(self.value)
    # round() is piecewise constant (zero derivative), like np.round: a plain result is exact.
    T.__round__ = lambda self, ndigits=None: round(self.value, ndigits) if ndigits is not None else round(self.value)
    # Formatting only reads the number for display (f"{loss:.3f}"): no gradient is lost.
    T.__format__ = lambda self, spec: format(self.value, spec)
    # Truth value: value-dependent control flow (if x > 0, while err > tol) is allowed; the
    # branch taken is part of the function, as in the primal.
    T.__bool__ = lambda self: bool(self.value)

    # NumPy protocols
    T.__array_ufunc__ = _array_ufunc
    T.__array_function__ = lambda self, func, types, args, kwargs: array_function(func, types, args, kwargs)

    # Escape routes: each would read the raw number and lose the gradient.
    T.__float__ = _escape("float()", NUMBER_HINT)
    T.__int__ = _escape("int()", NUMBER_HINT)
    T.__index__ = _escape("use as an integer index", NUMBER_HINT)
    T.__complex__ = _escape("complex()", NUMBER_HINT)
    T.__array__ = _escape(ARRAY_CONVERSION, ARRAY_HINT)
    T.item = _escape(".item()", NUMBER_HINT)
    T.tolist = _escape(".tolist()", NUMBER_HINT)
    T.tobytes = _escape(".tobytes()", ARRAY_HINT)
    T.__reduce__ = _escape("pickling", "Pickle the plain value instead, outside the differentiated function")
    T.__reduce_ex__ = lambda self, protocol: T.__reduce__(self)
    for name in ("fill", "sort", "put", "itemset", "resize", "partition", "setfield", "byteswap", "view"):
        setattr(T, name, _unsupported_method(name))

    ArrayTracer.__float__ = _array_number("float()", float)
    ArrayTracer.__int__ = _array_number("int()", int)
    ArrayTracer.__complex__ = _array_number("complex()", complex)

    # Indexing and assignment: arrays only (see ArrayTracer)
    ArrayTracer.__getitem__ = mutation.getitem
    ArrayTracer.__setitem__ = mutation.setitem
    ArrayTracer.__len__ = lambda self: len(self.value)
    ArrayTracer.__iter__ = _iter
    T.__copy__ = lambda self: np.copy(self)
    T.__deepcopy__ = lambda self, memo: np.copy(self)

    # Metadata
    T.shape = property(lambda self: np.shape(self.value))
    T.ndim = property(lambda self: np.ndim(self.value))
    T.size = property(lambda self: np.size(self.value))
    T.dtype = property(lambda self: np.result_type(self.value))
    T.itemsize = property(lambda self: np.result_type(self.value).itemsize)
    T.nbytes = property(lambda self: np.size(self.value) * np.result_type(self.value).itemsize)
    T.flags = property(lambda self: np.asarray(self.value).flags)
    T.strides = property(lambda self: np.asarray(self.value).strides)
    T.T = property(lambda self: transpose(self))
    T.mT = property(lambda self: np.matrix_transpose(self))
    T.real = property(lambda self: self)
    T.imag = property(lambda self: np.zeros_like(self.value))

    # Methods that mirror NumPy functions
    T.reshape = lambda self, *shape, order="C": reshape(self, shape[0] if len(shape) == 1 else shape, order)
    T.transpose = lambda self, *axes: transpose(self, _axes_arg(axes))
    T.astype = lambda self, dtype, order="K", casting="unsafe", subok=True, copy=True: astype(self, dtype, copy)
    T.copy = copy_method
    T.flatten = lambda self, order="C": np.copy(np.ravel(self, order))
    T.conj = T.conjugate = lambda self: self
    for name in ("sum", "prod", "max", "min", "mean", "var", "std", "cumsum", "cumprod", "ravel", "squeeze",
                 "swapaxes", "clip", "diagonal", "trace", "dot", "repeat", "take", "argmax", "argmin",
                 "argsort", "nonzero", "any", "all", "round", "ptp", "searchsorted", "compress"):
        setattr(T, name, _method(getattr(np, name)))
    T.__getattr__ = _missing_attribute


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    # The fast path (a plain call of a ufunc with a native rule and no signature-specific
    # rules) is inlined here: it is the single most frequent dispatch in derived code, and
    # each Python call saved is ~5% of a small primitive's cost.
    prim = FAST_UFUNCS.get(ufunc)
    if prim is not None and not kwargs and method == "__call__":
        if len(inputs) == 1:
            xv = self.value
            ans = prim.fwd(xv)
            tape = self.tape
            nodes = tape.nodes
            big = prim.trim is not None and type(ans) is ndarray and ans.size >= _SHAPE_ONLY_MIN
            nodes.append(unary_node(prim, self.idx, ans, xv) if big else (pb_unary, prim, self.idx, ans, xv))
            t = _new(ArrayTracer if type(ans) is ndarray else Tracer)
            t.value = ans
            t.idx = len(nodes) - 1
            t.tape = tape
            return t
        return apply2(prim, inputs[0], inputs[1])
    return ufunc_call(ufunc, method, inputs, kwargs)


def _axes_arg(axes):
    # x.transpose(), x.transpose((1, 0)) and x.transpose(1, 0) all mean the same as NumPy's
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return axes or None


def _iter(self):
    if np.ndim(self.value) == 0:
        raise TypeError("iteration over a 0-d array")
    for i in range(len(self.value)):
        yield self[i]


def _method(func):
    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)

    method.__name__ = func.__name__
    return method


def _unsupported_method(name):
    def refuse(self, *args, **kwargs):
        raise UnsupportedError(
            f"ndarray.{name}() on a traced value at {user_location(2)} is not supported "
            f"(it would change the array behind the engine's back); use the np.{name} function form if there is one"
        )

    return refuse


def _missing_attribute(self, name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise UnsupportedError(
        f"ndarray attribute {name!r} is not supported on traced values (at {user_location(2)}); "
        "compute it from the plain value outside the differentiated function"
    )


_install()
