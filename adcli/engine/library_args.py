"""The arguments of a traced call of a SciPy function with a native rule (engine.library):
lists and tuples holding traced values become traced arrays before the rule sees them."""

from __future__ import annotations

import inspect

import numpy as np

from .containers import as_array
from .core import has_tracer
from .registry import REGISTRY


def as_arrays(key, args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` with every list or tuple that holds a traced value made the traced
    array NumPy would make of it (SciPy's bodies ``np.asarray`` their array-like arguments), so a
    traced leaf in ``logsumexp([x0, x1])`` or ``norm.logpdf(c, loc=[a, b])`` is differentiated,
    not read as a constant; the parameters a rule takes as containers itself (``odeint``'s
    ``args``: see :func:`library_rule`) are left to it. A list NumPy cannot make one float
    array of is refused by name. A plain list in a parameter the rule declares array-like
    becomes the plain array SciPy would make of it (the rule's pullback does array arithmetic)."""
    own, arrays = OWN.get(key, ()), ARRAYS.get(key, ())
    if not any(type(a) is list or type(a) is tuple for a in args) and \
            not any(type(v) is list or type(v) is tuple for v in kwargs.values()):
        return args, kwargs
    names = _parameters(key) if (own or (arrays and arrays != "*")) else ()

    def convert(a, name, where):
        if not (type(a) is list or type(a) is tuple) or name in own:
            return a
        if has_tracer(a):
            return _as_array(key, a, where)
        if arrays == "*" or name in arrays:
            return np.asarray(a)
        return a

    args = tuple(convert(a, names[i] if i < len(names) else None, i) for i, a in enumerate(args))
    kwargs = {k: convert(v, k, k) for k, v in kwargs.items()}
    return args, kwargs


def _as_array(key, a, where):
    name = REGISTRY[key].name if key in REGISTRY else getattr(key, "__qualname__", "?")
    return as_array(a, name, f"argument {where}" if isinstance(where, int) else f"{where}=")


def _parameters(key) -> tuple:
    """The parameter names of the library function ``key``, in order (cached)."""
    names = _PARAMS.get(key)
    if names is None:
        fn = getattr(key, "__func__", key)
        try:  # the function's own (kept in __signature__ when patched; a wrapper's __wrapped__ followed)
            sig = inspect.signature(fn)
            names = tuple(p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        except (TypeError, ValueError):  # pragma: no cover - a signature inspect cannot read
            names = ()
        _PARAMS[key] = names
    return names


_PARAMS: dict = {}
OWN: dict = {}  # registry key -> the parameters its rule takes as containers (pytrees) itself
ARRAYS: dict = {}  # registry key -> its array-like parameters ("*": all of them)


