"""The one registry through which every NumPy callable is dispatched.

``REGISTRY[func]`` is an :class:`Entry` with, in lookup order:

* ``by_signature``: rules for exact concrete signatures (imported or hand-written rules, keyed by
  the tuple of argument descriptors; see engine.signature);
* ``native``: the engine's own rule, valid for every float type;
* ``derivation``: a verified derivation (the function's NumPy body is run with tracers).

A callable with none of these raises NoRuleError naming it and its signature. The dict lookup
is O(1) whatever the number of rules.
"""

from __future__ import annotations

from typing import Callable


class Entry:
    __slots__ = ("func", "name", "native", "by_signature", "derivation")

    def __init__(self, func, name: str) -> None:
        self.func = func
        self.name = name
        self.native: Callable | None = None
        self.by_signature: dict = {}
        self.derivation = None

    def __repr__(self) -> str:
        kinds = [k for k in ("native", "derivation") if getattr(self, k) is not None]
        if self.by_signature:
            kinds.append(f"{len(self.by_signature)} signature rule(s)")
        return f"<entry {self.name}: {', '.join(kinds) or 'nothing'}>"


REGISTRY: dict = {}


def qualified_name(func) -> str:
    """``numpy.linalg.solve``-style name of a NumPy callable (ufuncs: ``numpy.sin``)."""
    name = getattr(func, "__name__", None) or repr(func)
    module = getattr(func, "__module__", None)
    if module is None or type(func).__name__ == "ufunc":
        module = "numpy"
    if module.startswith("numpy"):
        # Public spelling: numpy._core.fromnumeric.sum -> numpy.sum, numpy.linalg._linalg -> numpy.linalg
        public = "numpy"
        for sub in ("numpy.linalg", "numpy.fft"):
            if module.startswith(sub):
                public = sub
        return f"{public}.{name}"
    qual = getattr(func, "__qualname__", name)
    return f"{module}.{qual}"


def entry(func) -> Entry:
    """The registry entry for ``func``, created on first use."""
    e = REGISTRY.get(func)
    if e is None:
        e = REGISTRY[func] = Entry(func, qualified_name(func))
    return e


def defnative(*funcs):
    """Decorator: ``impl`` is the engine's native rule for each of ``funcs``. It is called with
    the caller's arguments (tracers included) and records primitives itself."""

    def register(impl):
        for func in funcs:
            entry(func).native = impl
        return impl

    return register
