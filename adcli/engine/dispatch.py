"""Where NumPy hands traced values to the engine: ``__array_ufunc__`` and ``__array_function__``.

Both look the callable up in the registry (engine.registry); a signature-specific rule wins
over the native rule, which wins over a verified derivation. A miss is a NoRuleError that
names the callable and its signature, never a silent fall-through to NumPy.
"""

from __future__ import annotations

import sys

import numpy as np
from numpy import ndarray

from ..errors import NoRuleError, TracingError, UnsupportedError
from . import containers, hooks
from .core import ArrayTracer, Primitive, Tracer, apply, apply1, apply2, has_tracer, make_tracer
from .escapes import PLAIN_ARRAY
from .fills import Fill, promote_outputs, unfill
from .plain_writes import augmented_store
from .registry import ACCUMULATIONS, METHODS, NONDIFF, REDUCTIONS, UFUNCS, declared_rule, names_of, serving, ufunc_rule
from .signature import Signature
from .sums import unbroadcast
from .tape import Tape
from .where import user_instruction, user_location

# ufunc keyword arguments that change nothing about the gradient.
_HARMLESS_KWARGS = frozenset({"casting", "order", "subok"})


def ufunc_call(ufunc, method: str, inputs: tuple, kwargs: dict):
    """The body of ``Tracer.__array_ufunc__``."""
    if kwargs:  # an array made by np.zeros & co. (engine.fills) as out=: traced, as the ufunc writes into it
        promote_outputs(inputs, kwargs)
        kwargs = unfill(kwargs)
    for a in inputs:
        if type(a) is Fill:
            inputs = unfill(inputs)
            break
    if kwargs:
        out = _out_arg(ufunc, kwargs)
        if out is not None:
            # np.add(a, b, out=y) for a traced y: y[...] = np.add(a, b), and NumPy returns y
            if type(out) is ndarray and out.base is not None:  # v[idx] op= t: the tape keeps no view of v (plain_writes)
                inputs = tuple(x.copy() if x is out else x for x in inputs)
            result = ufunc_call(ufunc, method, inputs, {k: v for k, v in kwargs.items() if k != "out"})
            if type(out) is ndarray:  # p op= v into a plain array no one else sees: p is rebound (see _out_arg)
                return _rebound(result, out)
            out[...] = result
            return out
        inputs, kwargs = _ufunc_kwargs(ufunc, method, inputs, kwargs)
    if method == "__call__":
        rule = declared_rule(ufunc, inputs, kwargs)
        if rule is not None:
            session = hooks._session
            if session is not None:
                return session.numpy_call(rule.signature.module, rule.signature.qualname, rule.source, rule, True,
                                          inputs, kwargs)
            return rule(*inputs, **kwargs)
        prim = ufunc_rule(ufunc)  # scipy.special's are registered on first use (engine/rules/scipy/special.py)
        unknown = set(kwargs) - {"dtype"}
        if unknown and ufunc not in NONDIFF:
            raise UnsupportedError(
                f"np.{ufunc.__name__}(..., {', '.join(sorted(unknown))}=...) with a traced value at {user_location(3)} "
                "is not supported: rearrange the operands instead (e.g. np.moveaxis) and call it without these options"
            )
        if prim is not None:
            if len(inputs) == 1:
                ans = apply1(prim, inputs[0])
            elif len(inputs) == 2:
                ans = apply2(prim, inputs[0], inputs[1])
            else:  # scipy.special.betainc: its VJPs unbroadcast themselves
                ans = apply(prim, *inputs)
            dtype = kwargs.get("dtype")
            return ans if dtype is None else ans.astype(dtype)
        if ufunc in NONDIFF:
            return NONDIFF[ufunc](*inputs, **kwargs)
        if ufunc is np.divmod and len(inputs) == 2 and not unknown:
            # (floor_divide, remainder): the quotient is piecewise constant (plain), the remainder traced
            return np.floor_divide(*inputs, **kwargs), np.remainder(*inputs, **kwargs)
    elif method == "reduce" and ufunc in REDUCTIONS:
        if np.ndim(_value(inputs[0])):
            kwargs.setdefault("axis", 0)  # ufunc.reduce reduces axis 0 by default, unlike np.sum
        return METHODS["reduce"](REDUCTIONS[ufunc], f"np.{ufunc.__name__}.reduce", *inputs, **kwargs)
    elif method == "accumulate" and ufunc in ACCUMULATIONS:
        axis = kwargs.pop("axis", 0)
        dtype = kwargs.pop("dtype", None)
        x = inputs[0] if dtype is None else inputs[0].astype(dtype)
        if kwargs:
            raise UnsupportedError(
                f"np.{ufunc.__name__}.accumulate(..., {', '.join(kwargs)}=...) on a traced value is not supported"
            )
        return apply(ACCUMULATIONS[ufunc], x, axis=int(axis) % max(np.ndim(x.value), 1))
    elif method == "outer" and ufunc in UFUNCS and len(inputs) == 2:
        a, b = inputs
        nb = np.ndim(_value(b))
        return ufunc_call(ufunc, "__call__", (np.reshape(a, np.shape(_value(a)) + (1,) * nb), b), kwargs)
    elif method == "at" and ufunc in _AT and len(inputs) == 3 and not kwargs:
        return _ufunc_at(ufunc, *inputs)
    elif ufunc in NONDIFF:
        return getattr(ufunc, method)(*[_value(x) for x in inputs], **kwargs)
    module, name = names_of(ufunc)
    call = Signature.of_call(module, name if method == "__call__" else f"{name}.{method}", inputs, {})
    raise NoRuleError(
        f"no rule and no verified derivation for {call} at {user_location()}: "
        "import one (`adcli rules list`) or write one (`adcli export`)"
    )


def _scatter_vjp(g, ans, b, shape, dtype, indices, sign):
    return unbroadcast(sign * np.asarray(g)[indices], b)


def _scatter_fwd(b, shape, dtype, indices, sign):
    z = np.zeros(shape, dtype)
    np.add.at(z, indices, b if sign > 0 else -b)
    return z


_SCATTER = Primitive("numpy.add.at", _scatter_fwd, _scatter_vjp)
_AT = {np.add: 1.0, np.subtract: -1.0}


def _ufunc_at(ufunc, a, indices, b):
    """``np.add.at(a, indices, b)`` (and subtract): ``a`` gains the scatter-sum of ``b`` at
    ``indices``, repeated indices accumulating; written into a traced ``a`` in place."""
    if not isinstance(a, Tracer):
        raise TracingError(
            f"np.{ufunc.__name__}.at into a plain array with a traced value at {user_location(3)}: {PLAIN_ARRAY}"
            "Make the array from a traced value (out = np.zeros_like(x, shape=(n,))), or write "
            "out = np.bincount(indices, weights=v, minlength=n) for sums into a 1-d array"
        )
    if isinstance(indices, Tracer) or has_tracer(indices):
        raise TracingError(f"np.{ufunc.__name__}.at with traced indices at {user_location(3)}: indices must be integers")
    av = a.value
    s = apply(_SCATTER, b, av.shape, av.dtype, indices, _AT[ufunc])
    a[...] = a + s
    return None


def _out_arg(ufunc, kwargs):
    """The traced array a ufunc writes into (``out=y``), or None; a plain ``out`` is refused."""
    out = kwargs.get("out")
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if out is None or out is Ellipsis:
        return None
    if isinstance(out, Tracer) and type(out.value) is np.ndarray and ufunc.nout == 1:
        return out
    if user_instruction(3) == "BINARY_OP":
        if _unseen(out) or _stored_back(out):
            return out
        if type(out) is ndarray and out.dtype.kind == "f" and out.flags.writeable:
            why = ("something else holds the array (the caller, another name, a container, or a view taken before "
                   "this operator) and would keep the bare numbers, losing the gradient. ")
        else:
            why = PLAIN_ARRAY
        raise TracingError(
            f"an in-place operator on a plain array with a traced operand at {user_location(4)}: "
            f"{why}Write p = p + v (a new traced array), or make p from a traced value (np.zeros_like(x), x.copy())"
        )
    raise UnsupportedError(
        f"np.{ufunc.__name__}(..., out=...) into an array that is not traced, with a traced operand, at "
        f"{user_location(4)}: the gradient would be lost; write y = np.{ufunc.__name__}(...) instead"
    )


# --- p op= v: an in-place operator on a plain array, with a traced operand ----------------------
#
# ``v0 = x1 + 0.0; v0 /= x0`` with x1 left out of argnums: v0 is a plain array the function made,
# and NumPy would write x0's quotient into it. Python binds the name to what the operator returns,
# so when nothing else can see v0's buffer (no other name, container slot or view holds it: its
# reference count is the one a lone local has on this path, measured once by _calibrate below,
# and it views no other array) returning the new traced array instead is the same program. Only
# when something else holds the buffer is it refused, as before: that holder would keep plain
# numbers.

_LONE_REFS: list = []  # the reference count of a plain array held by one local, seen in _unseen


def _unseen(out) -> bool:
    """Whether the plain float array ``out`` of ``p op= v`` is held by the operator's target alone."""
    if type(out) is not ndarray or out.base is not None or out.dtype.kind != "f" or not out.flags.writeable:
        return False
    refs = sys.getrefcount(out)
    if _CALIBRATING:
        _LONE_REFS.append(refs)
        return True
    if not _LONE_REFS:
        _calibrate()
    return refs <= _LONE_REFS[0]


def _stored_back(out) -> bool:
    """``v[idx] op= t`` on a plain float ``v``: ``out`` is the view ``v[idx]``, and Python stores
    the operator's result back into ``v[idx]`` next (engine.plain_writes does that store)."""
    return type(out) is ndarray and out.dtype.kind == "f" and out.flags.writeable and augmented_store(4)


_CALIBRATING = False
# compiled under a file name of its own, so that where.user_instruction takes it for the user's
# frame, as it takes the program's: the same path to _unseen, the same count
_CALIBRATION = compile("def calibrate(t):\n    p = t.value * 0.0\n    p *= t\n    return p\n", "<adcli calibration>",
                       "exec")


def _calibrate() -> None:
    global _CALIBRATING
    scope: dict = {}
    exec(_CALIBRATION, scope)  # noqa: S102 - our own constant source
    tape = Tape()
    _CALIBRATING = True
    try:
        scope["calibrate"](make_tracer(np.ones(2), tape.leaf(), tape))
    finally:
        _CALIBRATING = False
        tape.close()
    if not _LONE_REFS:  # pragma: no cover - the path changed: never rebind
        _LONE_REFS.append(0)


def _rebound(result, out):
    """The value ``p op= v`` binds p to: the result, cast to p's dtype and checked against its
    shape as NumPy writes into p."""
    shape = np.shape(result.value if isinstance(result, Tracer) else result)
    if shape != out.shape:
        raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the broadcast shape {shape}")
    value = result.value if isinstance(result, Tracer) else result
    if np.result_type(value) != out.dtype:
        result = result.astype(out.dtype)
    return result


def _ufunc_kwargs(ufunc, method, inputs, kwargs):
    kwargs = dict(kwargs)
    kwargs.pop("out", None)
    if "where" in kwargs and method == "__call__":
        if kwargs.pop("where") is not True:
            raise UnsupportedError(f"np.{ufunc.__name__}(..., where=...) with a traced value: use np.where on the result")
    for k in _HARMLESS_KWARGS:
        kwargs.pop(k, None)
    return inputs, kwargs


def _value(x):
    return x.value if isinstance(x, Tracer) else x


# argument types that hold no container, subclass or Fill: array_function passes them as they are
_PLAIN_ARGUMENTS = frozenset({ArrayTracer, Tracer, ndarray, float, int, bool, str, type(None), np.float64, np.float32,
                              np.int64, np.intp, np.bool_, slice, np.dtype})


def array_function(func, types, args: tuple, kwargs: dict):
    """The body of ``Tracer.__array_function__``."""
    for a in args:  # lists holding traced values, ndarray subclasses, fills: arrays or refused (containers)
        if type(a) not in _PLAIN_ARGUMENTS:  # (one set lookup per argument for the common ones)
            args, kwargs = containers.arguments(func, args, kwargs)
            break
    else:
        for a in kwargs.values():
            if type(a) not in _PLAIN_ARGUMENTS:
                args, kwargs = containers.arguments(func, args, kwargs)
                break
    served = serving(func, args, kwargs)
    if served is None or served.fn is None:
        raise no_rule(func, args, kwargs)
    fn, spread = served.fn, served.spread
    session = hooks._session
    if session is None:  # the usual case: no closure, one call
        return fn(*args, **kwargs) if spread else fn(args, kwargs)
    # a profiler: it times the call and records the signature
    module, qualname = names_of(func)
    return session.numpy_call(module, qualname, served.source, fn, spread, args, kwargs)


def no_rule(func, args, kwargs) -> NoRuleError:
    module, qualname = names_of(func)
    return NoRuleError(
        f"no rule and no verified derivation for {Signature.of_call(module, qualname, args, kwargs)} at "
        f"{user_location(3)}: import one (`adcli rules list`) or write one (`adcli export`)"
    )
