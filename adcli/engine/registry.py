"""The one registry of rules: every rule form, its caches, and the answer to "what serves this call".

Rule forms, in lookup order for one call:

* a *declared* rule for the call's exact signature (hand-written or imported; an object with
  ``target``, ``key`` (engine.signature), ``source`` and ``__call__``), in ``Entry.by_signature``;
* the engine's *native* rule, valid for every float type: ``Entry.native`` for array functions,
  a :class:`~adcli.engine.core.Primitive` in ``UFUNCS`` for ufuncs;
* a verified *derivation* (the function's NumPy body run with tracers), ``Entry.derivation``;
* for a user's Python function (keyed ``(module, qualname)``): its own body, traced (derived).

A callable with none of these raises NoRuleError naming it and its signature. Lookups are O(1)
dict hits whatever the number of rules. ``FAST_UFUNCS`` (the ufuncs whose plain calls can skip
the registry: a native rule and no declared one) is kept in step here, by :func:`add_rule` and
:func:`remove_rule`, and nowhere else.
"""

from __future__ import annotations

import sys
from typing import Callable, NamedTuple

import numpy as np

from ..errors import RuleError
from .descriptors import callable_name
from .signature import signature_key

# ufunc -> Primitive: the native rules of ufuncs (filled by rules.elementwise.defufunc)
UFUNCS: dict = {}
# the subset of UFUNCS no declared rule overrides (the Tracer's ufunc fast path)
FAST_UFUNCS: dict = {}

# What the ndarray surface binds (engine.tracer_api, engine.dispatch), filled by the rule modules
# (engine/rules/) as they load: the surface finds rules here and imports no rule module.
OPERATORS: dict = {}  # a Python operator (operator.add, ...) -> the Primitive its dunder records
NONDIFF: dict = {}  # a ufunc whose outputs carry no gradient -> its call on plain values
REDUCTIONS: dict = {}  # a ufunc -> the Primitive ``ufunc.reduce`` records
ACCUMULATIONS: dict = {}  # a ufunc -> the Primitive ``ufunc.accumulate`` records
METHODS: dict = {}  # "reshape", "transpose", "astype", "copy", "reduce" -> the rule the method calls


class Entry:
    """Everything registered for one callable (a NumPy callable, or ``(module, qualname)``).

    ``unruled`` is how a call is served when no declared rule matches it (a Served, or None),
    kept in step with ``native`` and ``derivation`` so that dispatch builds nothing per call."""

    __slots__ = ("func", "module", "qualname", "_native", "by_signature", "_derivation", "unruled", "origin")

    def __init__(self, func, module: str, qualname: str) -> None:
        self.func = func
        self.module = module
        self.qualname = qualname
        self._native: Callable | None = None
        self.origin = "engine"  # where the native rule came from (defnative's ``origin``)
        self._derivation = None
        self.by_signature: dict = {}
        self.unruled = _unruled(self)

    @property
    def native(self):
        return self._native

    @native.setter
    def native(self, impl) -> None:
        self._native = impl
        self.unruled = _unruled(self)

    @property
    def derivation(self):
        return self._derivation

    @derivation.setter
    def derivation(self, d) -> None:
        self._derivation = d
        self.unruled = _unruled(self)

    @property
    def name(self) -> str:
        return f"{self.module}.{self.qualname}"

    @property
    def is_user(self) -> bool:
        return isinstance(self.func, tuple)

    def __repr__(self) -> str:
        kinds = [k for k in ("native", "derivation") if getattr(self, k) is not None]
        if self.by_signature:
            kinds.append(f"{len(self.by_signature)} signature rule(s)")
        return f"<entry {self.name}: {', '.join(kinds) or 'nothing'}>"


REGISTRY: dict = {}


def names_of(func) -> tuple[str, str]:
    """``(module, qualname)`` of a registry key in its public spelling: ``("numpy.linalg",
    "solve")``, ``("scipy.special", "gammaln")`` for SciPy's ufuncs, a user key as it is."""
    if isinstance(func, tuple):
        return func
    try:
        e = REGISTRY.get(func) if not isinstance(func, np.ufunc) else None
    except TypeError:  # an unhashable callable
        e = None
    if e is not None:  # named when registered (a SciPy function: engine.library)
        return e.module, e.qualname
    module, qualname = callable_name(func)
    if module == "numpy" and type(func).__name__ == "ufunc" and getattr(func, "__module__", None) is None:
        for where in ("scipy.special", "scipy.special._ufuncs"):  # never imported from here: only if the program did
            special = sys.modules.get(where)
            if special is not None and getattr(special, func.__name__, None) is func:
                module = "scipy.special"  # the public package, also for its private ufuncs (_zeta)
                break
    return module, qualname


def qualified_name(func) -> str:
    """``numpy.linalg.solve``-style name of a registry key."""
    module, qualname = names_of(func)
    return f"{module}.{qualname}"


def entry(func, name: str | None = None) -> Entry:
    """The registry entry for ``func``, created on first use (``name``: its public
    ``module.qualname`` when the callable's own attributes do not say it, e.g. a SciPy ufunc)."""
    e = REGISTRY.get(func)
    if e is None:
        module, qualname = names_of(func) if name is None else tuple(name.rsplit(".", 1))
        e = REGISTRY[func] = Entry(func, module, qualname)
    return e


def defnative(*funcs, origin: str = "engine"):
    """Decorator: ``impl`` is the engine's native rule for each of ``funcs``. It is called with
    the caller's arguments (tracers included) and records primitives itself. ``origin`` says
    where the rule came from ("engine"; "advised": a library-tier verdict of the advisor over the
    bundled workloads and the corpus, docs/advisor.md § Engine defaults)."""

    def register(impl):
        for func in funcs:
            e = entry(func)
            e.native, e.origin = impl, origin
        return impl

    return register


def defufunc_rule(ufunc, prim) -> None:
    """The native rule (a Primitive) of a ufunc."""
    UFUNCS[ufunc] = prim
    e = REGISTRY.get(ufunc)
    if e is not None:
        e.unruled = _unruled(e)
    if (e is None or not e.by_signature) and ufunc.nin <= 2:  # the fast path handles one or two inputs
        FAST_UFUNCS[ufunc] = prim


# --- declared rules ----------------------------------------------------------------------------


def add_rule(rule, name: str | None = None):
    """Register a declared rule for ``rule.target`` and ``rule.key``; returns the rule it
    replaced (or None). The caller decides whether replacing is allowed."""
    e = entry(rule.target, name)
    old = e.by_signature.get(rule.key)
    e.by_signature[rule.key] = rule
    FAST_UFUNCS.pop(rule.target, None)  # plain calls of this ufunc must now consult the registry
    return old


def remove_rule(rule, restore=None) -> bool:
    """Take ``rule`` out of the registry (putting ``restore`` back in its place, if given);
    False if it was not registered. An entry left empty is dropped."""
    e = REGISTRY.get(rule.target)
    if e is None or e.by_signature.get(rule.key) is not rule:
        return False
    if restore is not None:
        e.by_signature[rule.key] = restore
    else:
        del e.by_signature[rule.key]
    if not e.by_signature:
        if rule.target in UFUNCS and rule.target.nin <= 2:
            FAST_UFUNCS[rule.target] = UFUNCS[rule.target]
        if e.native is None and e.derivation is None:
            del REGISTRY[rule.target]
    return True


def declared_rules() -> list:
    """Every declared rule, in registration order of their callables."""
    return [r for e in list(REGISTRY.values()) for r in list(e.by_signature.values())]


def declared_for(func) -> list:
    """The rules declared for one callable (a registry key), in declaration order."""
    try:
        e = REGISTRY.get(func)
    except TypeError:  # an unhashable callable
        return []
    return list(e.by_signature.values()) if e is not None else []


def declared_rule(func, args: tuple, kwargs: dict):
    """The declared rule for exactly this call's signature, or None."""
    e = REGISTRY.get(func)
    if e is None or not e.by_signature:
        return None
    return e.by_signature.get(signature_key(args, kwargs))


# --- what serves a call ------------------------------------------------------------------------


class Served(NamedTuple):
    """How one call is served. ``source``: ``hand-written`` / ``imported`` (a declared rule),
    ``native`` or ``derived``. ``fn`` is called as ``fn(*args, **kwargs)`` when ``spread``, else
    as ``fn(args, kwargs)`` (a derivation); None for a user function's own body and for a ufunc
    (the engine applies its Primitive). ``rule``: the declared rule, if one serves.
    ``fallback``: what would serve the call without the declared rule (None: nothing)."""

    source: str
    fn: Callable | None
    spread: bool
    rule: object | None
    fallback: str | None


def without_declared(func) -> str | None:
    """``native``, ``derived`` or None: what serves ``func`` when no declared rule does."""
    e = REGISTRY.get(func)
    if (e is not None and e.native is not None) or _is_ufunc_rule(func):
        return "native"
    if (e is not None and e.derivation is not None) or isinstance(func, tuple):
        return "derived"
    return None


# Lookups for ufunc rules registered on first use (engine/rules/scipy/special.py: SciPy's, only once the
# program has imported SciPy): each takes a ufunc and returns its Primitive or None.
LAZY_UFUNCS: list = []


def ufunc_rule(ufunc):
    """The native rule (a Primitive) of ``ufunc``, registering a lazy one on first use; None."""
    prim = UFUNCS.get(ufunc)
    if prim is None and isinstance(ufunc, np.ufunc):
        for lookup in LAZY_UFUNCS:
            prim = lookup(ufunc)
            if prim is not None:
                break
    return prim


def _is_ufunc_rule(func) -> bool:
    try:
        return func in UFUNCS or ufunc_rule(func) is not None
    except TypeError:  # an unhashable callable
        return False


def serving(func, args: tuple, kwargs: dict) -> Served | None:
    """What serves ``func(*args, **kwargs)`` now, or None (NoRuleError territory)."""
    try:
        e = REGISTRY.get(func)
    except TypeError:
        return None
    if e is None:
        return _UFUNC_SERVED if _is_ufunc_rule(func) else _USER_SERVED if isinstance(func, tuple) else None
    if e.by_signature:
        rule = e.by_signature.get(signature_key(args, kwargs))
        if rule is not None:
            return Served(rule.source, rule, True, rule, without_declared(func))
    return e.unruled


def _unruled(e: Entry) -> Served | None:
    """How ``e``'s callable is served when no declared rule matches the call."""
    if e.native is not None:
        return Served("native", e.native, True, None, "derived" if e.derivation is not None else None)
    if _is_ufunc_rule(e.func):
        return _UFUNC_SERVED
    if e.derivation is not None:
        return Served("derived", e.derivation, False, None, None)
    if isinstance(e.func, tuple):
        return _USER_SERVED
    return None


_UFUNC_SERVED = Served("native", None, True, None, None)  # the engine applies the ufunc's Primitive
_USER_SERVED = Served("derived", None, True, None, None)  # a user function's own body, traced


# --- naming a target, and taking rules out for a while -----------------------------------------

#: Predicates saying whether an object is a library (SciPy) callable the engine serves by
#: identity, like NumPy's: engine.library adds its own when it loads.
LIBRARY_KEYS: list[Callable[[object], bool]] = []


def target_key(target):
    """Registry key: the callable itself for NumPy, ``(module, qualname)`` for a Python function
    (or a ``"module:qualname"`` string naming one that is not defined yet, e.g. in a script)."""
    if isinstance(target, str):
        if ":" not in target:
            raise RuleError(f"name a function as 'module:qualname', e.g. '__main__:lml', not {target!r}")
        module, _, qual = target.partition(":")
        return (module, qual)
    if _is_numpy_callable(target):
        return target
    module = getattr(target, "__module__", None)
    qual = getattr(target, "__qualname__", None)
    if not callable(target) or module is None or qual is None or "<lambda>" in qual or "<locals>" in qual:
        raise RuleError(
            f"cannot declare a rule for {target!r}: a target is a NumPy callable or a module-level Python function "
            "(lambdas and nested functions cannot be found again by name)"
        )
    original = getattr(target, "__adcli_original__", target)
    return (original.__module__, original.__qualname__)


def _is_numpy_callable(target) -> bool:
    if isinstance(target, np.ufunc) or any(is_key(target) for is_key in LIBRARY_KEYS):  # SciPy's: engine.library
        return True
    module = getattr(target, "__module__", "") or ""
    return module == "numpy" or module.startswith("numpy.")


class suspended:
    """Context manager: the given rules are out of the registry for the duration, so calls
    fall back to the native rule or the derivation."""

    def __init__(self, *rules) -> None:
        self.rules = rules
        self.removed: list = []

    def __enter__(self):
        self.removed = [r for r in self.rules if remove_rule(r)]
        return self

    def __exit__(self, *exc):
        for r in self.removed:
            add_rule(r)
        self.removed = []
