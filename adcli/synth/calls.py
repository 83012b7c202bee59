"""What a synthesized rule calls to differentiate a call it has no written adjoint for: the
engine's gradient of that one call (``call_vjp``, ``method_vjp``), a user's function through its
own synthesized rule, its pullback kept by the forward pass (``push``, ``pull``), and ``np.dot``
beyond two dimensions (``dot_vjp``)."""

from __future__ import annotations

import copy as copy_module
import inspect
import numbers
import weakref
from types import FunctionType

import numpy as np

from ..engine import lists
from ..engine.grad import vjp as _engine_vjp
from ..engine.registry import declared_rule
from ..errors import SynthesisError
from .kinds import of_value
from .runtime import Sparse, dense, sparse, unbroadcast
from .synthesize import synthesize

__all__ = ["call_vjp", "dot_vjp", "method_vjp", "pull", "push"]

ndarray = np.ndarray
_CONTAINERS = (list, tuple, dict)
_PLAIN = (ndarray, float)  # adjoints sparse() leaves as they are


def _differentiable(v) -> bool:
    if isinstance(v, _CONTAINERS):
        return any(_differentiable(x) for x in (v.values() if isinstance(v, dict) else v))
    if isinstance(v, ndarray):
        return v.dtype.kind in "fc"
    return isinstance(v, (float, complex, np.floating, np.complexfloating))


def call_vjp(f, args: tuple, kwargs: dict, argnums: tuple, g) -> tuple:
    """The cotangents of ``f(*args, **kwargs)``'s arguments named in ``argnums`` (a position, or
    a keyword argument's name) for the output cotangent ``g``: the callee's synthesized rule for
    a function of the user's (synthesized once), else the engine's gradient of this one call
    (the call runs again, traced). An argument holding no float gets 0.0."""
    if isinstance(g, numbers.Number) and g == 0:
        return (0.0,) * len(argnums)
    wanted = [k for k in argnums if _differentiable(args[k] if isinstance(k, int) else kwargs[k])]
    if not wanted:
        return (0.0,) * len(argnums)
    got: dict = {}
    f = lists.list_aware(f)  # np.asarray of a list of values: the engine's own version
    fwd = synthesized(f, args, tuple(wanted))
    if fwd is not None:
        ans, pullback = fwd(*args, **kwargs)
        cts = pullback(dense(g, ans))
        names = f.__code__.co_varnames[:f.__code__.co_argcount]
        got = {k: cts[k if isinstance(k, int) else names.index(k)] for k in wanted}
    else:
        if isinstance(g, Sparse) or not isinstance(g, ndarray) and np.ndim(g) == 0:
            g = dense(g, f(*args, **kwargs))
        n = len(args)
        names = [k for k in wanted if isinstance(k, str)]
        call = f
        if names:  # keyword arguments differentiated: passed by position to a wrapper
            rest = {k: v for k, v in kwargs.items() if k not in names}

            def call(*a):
                return f(*a[:n], **rest, **dict(zip(names, a[n:])))
            args, kwargs = tuple(args) + tuple(kwargs[k] for k in names), {}
        positions = tuple(k if isinstance(k, int) else n + names.index(k) for k in wanted)
        _, cts = _engine_vjp(call, positions, g)(*args, **kwargs)
        got = dict(zip(wanted, cts))
    return tuple(sparse(got[k]) if k in got else 0.0 for k in argnums)


def push(stack: list, wrt: tuple, f, *args, **kwargs):
    """Call the user's function ``f`` through its synthesized rule for the arguments ``wrt``
    (positions, keyword arguments' names) and keep ``(answer, its pullback, f)`` on ``stack``
    for the pullback (``pull``); a function outside the subset is called as it is and kept with
    its arguments (``pull`` then takes the engine's gradient)."""
    fwd = synthesized(f, args, wrt)
    if fwd is None:  # differentiated later by running it again: a generator it draws from, as it is now
        kept = (_generators_copied(args), _generators_copied(kwargs))
        ans = f(*args, **kwargs)
        stack.append((ans, kept, f))
    else:
        ans, pullback = fwd(*args, **kwargs)
        stack.append((ans, pullback, f))
    return ans


def _generators_copied(tree):
    """``tree`` with each random generator in it copied (its state now): a call made again with
    it draws the same numbers. Arrays are kept as they are."""
    if isinstance(tree, (np.random.Generator, np.random.RandomState)):
        return copy_module.deepcopy(tree)
    if isinstance(tree, dict):
        return {k: _generators_copied(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_generators_copied(v) for v in tree)
    return tree


def pull(kept: tuple, g, argnums: tuple) -> tuple:
    """The cotangents at ``argnums`` (positions, or keyword arguments' names) of a call ``push``
    kept, for its output cotangent ``g``."""
    ans, pullback, f = kept
    if isinstance(pullback, tuple):
        return call_vjp(f, *pullback, argnums, g)
    if isinstance(g, numbers.Number) and g == 0:
        return (0.0,) * len(argnums)
    cts = pullback(dense(g, ans), True)  # the callee's adjoints as they are (a Sparse stays one)
    out = []
    for k in argnums:
        c = cts[k] if type(k) is int else cts[f.__code__.co_varnames.index(k)]
        out.append(0.0 if c is None else c if type(c) in _PLAIN else sparse(c))
    return tuple(out)


def method_vjp(name: str, args: tuple, kwargs: dict, argnums: tuple, g) -> tuple:
    """``call_vjp`` of the method ``name`` of ``args[0]`` (x.sum(axis=0), x.reshape(n, m))."""
    return call_vjp(_METHODS.get(name) or _METHODS.setdefault(name, _method(name)), args, kwargs, argnums, g)


def _method(name: str):
    def call(obj, *args, **kwargs):
        return getattr(obj, name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


_METHODS: dict = {}
_SYNTHESIZED = weakref.WeakKeyDictionary()  # a user's function -> {its arguments' kinds: its fwd, or None}


def synthesized(f, args: tuple = (), wrt: tuple | None = None):
    """The synthesized ``fwd`` of a user's function for arguments of the kinds of ``args``,
    differentiated in ``wrt`` (positions or names; all if None) (None for NumPy's and SciPy's,
    for a function outside the subset, and for a dispatch point with a rule declared for these
    arguments: the engine differentiates those, the rule serving). One per function, kinds of
    arguments and ``wrt``, made on first use."""
    original = getattr(f, "__adcli_original__", None)
    if original is not None:  # a dispatch point: a rule declared for these arguments serves them, through the engine
        if declared_rule((original.__module__, original.__qualname__), args, {}) is not None:
            return None
        f = original  # else the function itself (the profiler makes every function of the program one)
    key = (tuple([of_value(a) for a in args]), wrt)
    per_kinds = _SYNTHESIZED.get(f) if type(f) is FunctionType else None
    if per_kinds is not None and key in per_kinds:  # a function seen before (the checks below passed)
        return per_kinds[key]
    if not inspect.isfunction(f) or (getattr(f, "__module__", None) or "").split(".")[0] in ("numpy", "scipy", "adcli"):
        return None
    if per_kinds is None:
        per_kinds = _SYNTHESIZED[f] = {}
    try:
        fwd = synthesize(f, args if args else None, wrt=wrt).load()
    except SynthesisError:
        fwd = None
    per_kinds[key] = fwd
    return fwd


def dot_vjp(k: int, g, a, b):
    """The cotangent of ``np.dot(a, b)``'s operand ``k`` (0: a, 1: b) for arrays of at most two
    dimensions and scalars; other forms by the engine's gradient of the call."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:  # a product
        c = g * (b if k == 0 else a)
        return unbroadcast(c, np.asarray(a if k == 0 else b)) if (na if k == 0 else nb) else np.sum(c)
    if na > 2 or nb > 2:
        return call_vjp(np.dot, (a, b), {}, (k,), g)[0]
    if k == 0:
        if nb == 1:
            return np.multiply.outer(g, b) if na == 2 else g * b
        return g @ np.transpose(b) if na == 2 else b @ g
    if na == 1:
        return np.multiply.outer(a, g) if nb == 2 else g * a
    return np.transpose(a) @ g
