"""Library dispatch points: SciPy's (and a few of NumPy's) Python-level functions served by
rules, however imported.

NumPy hands traced values to the engine through its override protocols; SciPy's Python
functions (``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf``, ``scipy.integrate.odeint``)
have no such hook: their bodies convert every argument with ``np.asarray``, which a traced value
refuses. A program reaches them by many names (``sp.logsumexp``, ``from scipy.special import
logsumexp`` done before adcli was imported, ``norm.logpdf`` of a ``norm`` imported anywhere), but
all of those are the *same function object*. So the engine intercepts at the object:

* **What is patched.** For each function a rule module declares with :func:`library_rule`
  (``scipy.special.logsumexp``; for a distribution method, the shared function behind it, e.g.
  ``rv_continuous.logpdf`` for ``norm.logpdf`` and ``t.logpdf``), its ``__code__`` is replaced
  by a two-line trampoline that calls a router kept in the function's ``__kwdefaults__`` (one
  private entry, added once at first use: the original code never reads it, so calls and
  ``inspect.signature`` see no difference). The function object, its name, module, defaults and
  identity stay as they are. SciPy's lazy submodules (``import scipy`` then ``scipy.stats``)
  are covered too: once patched, ``scipy.__getattr__`` patches what a first access loads.
* **When.** From the first gradient on: a gradient's start patches the rule functions of the
  modules loaded since the last one (engine.grad calls :func:`enter`; when no module was loaded
  meanwhile, that is one comparison of ``len(sys.modules)``). Only modules the program has already
  imported are touched; SciPy is never imported from here. The patch stays: setting and undoing
  it around every gradient cost time for every function at every gradient (for the functions of
  NumPy's and SciPy's five modules, a large share of the engine's fixed cost of a ``grad`` call;
  docs/engine.md § Measurements behind the code).
  :func:`restore` puts the original code back.
* **What a plain call sees.** The same function object, name, module, defaults, identity and
  ``inspect.signature`` (kept in ``__signature__``); a call with no traced argument goes to a copy
  of the original function made at first patch (one extra Python call and a scan of the
  arguments, longer for containers than for arrays and numbers: small next to what the SciPy
  functions themselves take; docs/engine.md § Measurements behind the code), with SciPy's own
  values and errors; a traceback through it shows one extra frame, this module's trampoline. A
  traced call is looked up in the registry like a NumPy function (a declared rule for its
  signature, else the native rule) and served. Threads: a call from another thread at any moment
  runs either code, both correct for plain arguments.

A distribution method routes by the distribution's class: ``rv_continuous.logpdf`` called on
``norm`` serves ``scipy.stats.norm.logpdf``; on a distribution without a rule, with a traced
argument, it raises NoRuleError naming ``scipy.stats.<name>.logpdf`` at the user's line.
"""

from __future__ import annotations

import inspect
import sys
import threading
import types

import numpy as np

from ..errors import NoRuleError, TracingError
from . import hooks
from .fills import unfill
from .library_args import ARRAYS, OWN, as_arrays
from .pytree import hidden_in
from .registry import LIBRARY_KEYS, REGISTRY, Entry, serving
from .signature import Signature
from .where import user_location

# name -> native rule (called with the caller's arguments, tracers included), declared by the
# rule modules (engine/rules/scipy/); resolved to objects once their module is loaded.
RULES: dict = {}
# The SciPy modules the rules come from (imported by `adcli rules list`, never by the engine).
MODULES = ("scipy.special", "scipy.stats", "scipy.signal", "scipy.linalg", "scipy.integrate")
_ROUTE = "__adcli_route__"  # the private keyword-only default the trampoline reads
# argument types that never hold a traced value (a plain call's fast path)
_PLAIN = frozenset({np.ndarray, float, int, bool, str, type(None), np.float64, np.float32, np.int64, np.bool_})


class _Patch:
    """One patched function object: its original code, the copy that runs plain calls, and
    where traced calls go (``key`` for a function; ``by_class`` for a shared method)."""

    __slots__ = ("func", "code", "trampoline", "clone", "key", "by_class", "method", "guard")

    def __init__(self, func, trampoline) -> None:
        self.func = func
        self.code = func.__code__
        self.trampoline = trampoline
        clone = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
        clone.__kwdefaults__ = dict(func.__kwdefaults__) if func.__kwdefaults__ else None
        clone.__qualname__ = func.__qualname__
        clone.__module__ = func.__module__
        clone.__doc__ = func.__doc__
        self.clone = clone
        self.key = None
        self.by_class: dict = {}
        self.method = func.__name__
        self.guard = None  # a function taking callbacks (engine.callbacks): its checks, for every call
        # once and for good: the original code never reads this entry (only the trampoline does),
        # so calls and inspect.signature see no difference, and a patch is one attribute write
        func.__kwdefaults__ = {**(func.__kwdefaults__ or {}), _ROUTE: self.route}

    def route(self, args: tuple, kwargs: dict):
        """The trampoline's whole body: a plain call runs the original, a traced one a rule."""
        if not _recording:  # no gradient records anywhere: nothing can be traced (a value kept from a
            return self.clone(*args, **kwargs)  # finished one refuses every use itself), so SciPy as it is
        if self.guard is not None:
            return self.guard(self.clone, args, kwargs)
        for a in args:  # the common plain call (arrays, numbers, None) without the recursive scan
            if type(a) not in _PLAIN:
                break
        else:
            if not kwargs or all(type(v) in _PLAIN for v in kwargs.values()):
                return self.clone(*args, **kwargs)
        args, kwargs = unfill(args), unfill(kwargs)  # arrays made by np.zeros & co. (engine.fills): what they stand for
        if not (hidden_in(args) or hidden_in(kwargs)):  # (dataclasses and dict subclasses looked into too)
            try:
                return self.clone(*args, **kwargs)
            except TracingError as e:  # a traced value it reached another way: a callback's closure
                raise TracingError(
                    f"{self._name(args)}(...) at {user_location(3)} reached a traced value "
                    "that is not among its arguments (a function it calls reads it from a closure or a global), "
                    "so no rule can return its gradient; pass the value as an argument (odeint: args=(...))"
                ) from e
        if self.key is not None:
            return call(self.key, args, kwargs)
        key = self.by_class.get(type(args[0])) if args else None
        if key is None:
            name = self._name(args)
            raise NoRuleError(f"no rule for {Signature.of_call(*name.rsplit('.', 1), args[1:], kwargs)} at "
                              f"{user_location(3)}: SciPy's Python code would read the raw numbers of its traced "
                              "arguments; write a rule for it (`adcli export`) or use a distribution adcli has "
                              "rules for (`adcli rules list`)")
        return call(key, args[1:], kwargs)


    def _name(self, args) -> str:
        """The public name of the call: ``scipy.stats.norm.logpdf`` (by the distribution's name)."""
        if self.key is not None:
            return REGISTRY[self.key].name
        owner = getattr(args[0], "name", None) if args else None
        if isinstance(owner, str) and owner.isidentifier():
            return f"scipy.stats.{owner}.{self.method}"
        return f"{self.func.__module__}.{self.func.__qualname__}"


def call(key, args: tuple, kwargs: dict):
    """Serve a traced call of the library function ``key`` (a registry key)."""
    args, kwargs = as_arrays(key, args, kwargs)
    served = serving(key, args, kwargs)
    e = REGISTRY[key]
    if served is None or served.fn is None:  # pragma: no cover - every RULES entry has a native rule
        raise NoRuleError(f"no rule for {Signature.of_call(e.module, e.qualname, args, kwargs)} at {user_location(3)}")
    session = hooks._session
    if session is None:
        return served.fn(*args, **kwargs) if served.spread else served.fn(args, kwargs)
    return session.numpy_call(e.module, e.qualname, served.source, served.fn, served.spread, args, kwargs)


def library_rule(name: str, shown: str | None = None, own: tuple = (), arrays: tuple | str = ()):
    """Decorator: ``impl`` is the native rule of the Python function ``name``
    (``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf``: module path, then attributes);
    ``shown``: the public name profiles and errors use, when ``name`` is a private path;
    ``own``: the parameters whose lists and tuples the rule handles itself (every other list or
    tuple holding a traced value reaches it as a traced array: :func:`as_arrays`); ``arrays``:
    the parameters SciPy converts with ``np.asarray`` (``"*"``: all), whose plain lists the rule
    receives as arrays."""

    def register(impl):
        RULES[name] = impl
        if own:
            OWN_NAMES[name] = tuple(own)
        if arrays:
            ARRAYS_NAMES[name] = arrays
        if shown is not None:
            SHOWN[name] = shown
        _resolved.discard(name)
        return impl

    return register


SHOWN: dict = {}  # name -> its public name, where the path is private
OWN_NAMES: dict = {}  # name -> the parameters its rule takes as containers itself
ARRAYS_NAMES: dict = {}  # name -> its array-like parameters


# --- resolving names to objects, once their module is loaded ----------------------------------

_patches: dict = {}  # function object -> _Patch
_resolved: set = set()  # names in RULES whose objects are registered (or cannot be)
_originals: dict = {}  # name -> the plain-call function (the clone) of a resolved name
KEYS: dict = {}  # name -> its registry key (the function, or a distribution's bound method)
_ready: list = []  # the patches with a route, in resolution order


def _lookup(name: str):
    """``(module, qualname, object)`` for a dotted name whose module is loaded, else None. A
    module's attributes are read from its ``__dict__``: ``getattr`` on a package with lazy
    submodules (``scipy.stats`` on ``scipy``) would import them, and the engine never imports
    SciPy (a gradient after ``import scipy`` would load five of its submodules, a slow import;
    docs/engine.md § Measurements behind the code)."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            obj = module
            for attr in parts[cut:]:
                obj = vars(obj).get(attr) if isinstance(obj, types.ModuleType) else getattr(obj, attr, None)
                if obj is None:
                    return None
            return ".".join(parts[:cut]), ".".join(parts[cut:]), obj
    return None


# A library dispatch point's code, as a traceback shows it:
#     def <the function>(*args, **kwargs):
#         return the route in <the function>.__kwdefaults__ (args, kwargs)
_TEMPLATE_LINE = sys._getframe().f_lineno - 1


def _trampoline(func):
    """A code object that calls the route in ``func``'s kwdefaults, with ``func``'s free
    variables (a code's free variables must match its function's closure), or None."""
    free = func.__code__.co_freevars
    if any(not v.isidentifier() or v.startswith("__adcli") for v in free):
        return None
    body = "".join(f"        {v}\n" for v in free)
    src = (
        "def __adcli_factory():\n"
        + "".join(f"    {v} = None\n" for v in free)
        + f"    def {func.__name__}(*__adcli_args, {_ROUTE}=None, **__adcli_kwargs):\n"
        + (f"        if False:\n{body.replace('        ', '            ')}" if free else "")
        + f"        return {_ROUTE}(__adcli_args, __adcli_kwargs)\n"
        + f"    return {func.__name__}\n"
    )
    scope: dict = {}
    # padded so that the trampoline's lines are the ones of _TEMPLATE_LINE below, in tracebacks
    src = "\n" * (_TEMPLATE_LINE + 1 - src.count("\n")) + src
    exec(compile(src, __file__, "exec"), scope)  # noqa: S102 - our own template, names checked above
    code = scope["__adcli_factory"]().__code__
    code = code.replace(co_qualname=func.__qualname__) if hasattr(code, "co_qualname") else code
    return code if code.co_freevars == free else None


def _patch_for(func):
    p = _patches.get(func)
    if p is None and isinstance(func, types.FunctionType):
        tramp = _trampoline(func)
        if tramp is not None:
            p = _patches[func] = _Patch(func, tramp)
    return p


GUARDS: dict = {}  # name -> the checks a function that takes callbacks runs with (engine.callbacks)


def library_guard(name: str, guard) -> None:
    """``name`` (a library function with no rule that calls back into the program: a root
    finder, an optimiser, a quadrature) runs through ``guard``, which
    refuses traced values reaching it, through its arguments or through a callback's closure.
    ``guard`` is called as ``guard(original, args, kwargs)``."""
    GUARDS[name] = guard
    _resolved.discard(name)


def _resolve_guards() -> None:
    for name in list(GUARDS):
        if name in _resolved:
            continue
        found = _lookup(name)
        if found is None:
            continue
        _resolved.add(name)
        p = _patch_for(found[2])
        if p is not None and p.key is None and not p.by_class:
            p.guard = GUARDS[name]
            if p not in _ready:
                _ready.append(p)


def _resolve() -> None:
    """Register every declared rule whose SciPy module is loaded now."""
    _resolve_guards()
    for name in list(RULES):
        if name in _resolved:
            continue
        found = _lookup(name)
        if found is None:
            continue
        module, qualname, obj = found
        func = getattr(obj, "__func__", obj)  # a distribution's bound method -> the shared function
        p = _patch_for(func)
        _resolved.add(name)
        if p is None:
            continue
        # the key: the function, or the bound method (equal to every other binding to the same object)
        if func is obj:
            p.key = obj
        else:
            p.by_class[type(obj.__self__)] = obj
        e = REGISTRY.get(obj)
        if e is None:
            if name in SHOWN:
                module, qualname = SHOWN[name].rsplit(".", 1)
            e = REGISTRY[obj] = Entry(obj, module, qualname)
        e.native = RULES[name]
        KEYS[name] = obj
        if name in OWN_NAMES:
            OWN[obj] = OWN_NAMES[name]
        if name in ARRAYS_NAMES:
            ARRAYS[obj] = ARRAYS_NAMES[name]
        if p not in _ready:
            _ready.append(p)
        _originals[name] = p.clone if func is obj else types.MethodType(p.clone, obj.__self__)


def key_of(name: str):
    """The registry key of the SciPy function ``name`` with a rule here, or None (never imports)."""
    if name not in KEYS and name in RULES:
        _resolve()
    return KEYS.get(name)


def is_key(obj) -> bool:
    """Whether ``obj`` is (equal to) the key of a SciPy function with a rule here."""
    if len(_resolved) < len(RULES) + len(GUARDS):
        _resolve()
    try:
        return any(obj == k for k in KEYS.values()) if callable(obj) else False
    except TypeError:  # pragma: no cover - an object whose == raises
        return False


LIBRARY_KEYS.append(is_key)


def original(name: str):
    """The unpatched SciPy function ``name`` (a rule's forward pass calls it on plain values)."""
    fn = _originals.get(name)
    if fn is None:
        _resolve()
        fn = _originals[name]
    return fn


def resolve_all() -> list:
    """Register the rules of every loaded SciPy module now (``adcli rules list``); the names."""
    _resolve()
    return sorted(n for n in _resolved if n in _originals)


# --- setting the patch ------------------------------------------------------------------------

_lock = threading.RLock()
_active: list = []
_modules_seen = 0  # len(sys.modules) when names were last resolved and patched
_lazy_getattr = None  # SciPy's module __getattr__ (its lazy submodules), once wrapped


def _apply() -> None:
    """Resolve the rules of newly loaded modules and patch every resolved function not patched
    yet (with the lock held)."""
    global _modules_seen, _lazy_getattr
    _modules_seen = len(sys.modules)
    if len(_resolved) < len(RULES) + len(GUARDS):
        _resolve()
    for p in _ready:
        if p.func.__code__ is p.code:
            if "__signature__" not in p.func.__dict__:  # what help() and inspect show, as before
                try:
                    p.func.__signature__ = inspect.signature(p.func)
                except (TypeError, ValueError):  # pragma: no cover - a signature inspect cannot read
                    pass
            p.func.__code__ = p.trampoline
            _active.append(p)
    scipy = sys.modules.get("scipy")
    if scipy is not None and _lazy_getattr is None:
        lazy = scipy.__dict__.get("__getattr__")
        if callable(lazy) and lazy is not _scipy_getattr:
            _lazy_getattr = lazy
            scipy.__getattr__ = _scipy_getattr


def _scipy_getattr(name):
    """SciPy's lazy submodules (``import scipy; scipy.stats.norm``) load on first attribute
    access, possibly while a gradient records: patch what they bring at once."""
    value = _lazy_getattr(name)
    with _lock:
        _apply()
    return value


def enter() -> None:
    """A gradient starts: patch the functions of modules loaded since the last time (the first
    gradient patches all loaded ones). A check of ``len(sys.modules)`` when nothing was loaded."""
    global _recording
    with _lock:
        _recording += 1
        if len(sys.modules) != _modules_seen:
            _apply()


def leave() -> None:
    """A gradient ends: when none records any more, plain calls of the patched functions run
    SciPy's code directly again (a plain program that once took a gradient keeps its speed)."""
    global _recording
    with _lock:
        _recording -= 1


_recording = 0  # the gradients recording now, on every thread (enter/leave)


def restore() -> None:
    """Put every patched function's own code back (and ``scipy.__getattr__``); the next
    gradient patches them again. For tests and for programs that want SciPy untouched."""
    global _modules_seen, _lazy_getattr
    with _lock:
        for p in _active:
            p.func.__code__ = p.code
        _active.clear()
        _modules_seen = 0
        scipy = sys.modules.get("scipy")
        if _lazy_getattr is not None and scipy is not None and scipy.__dict__.get("__getattr__") is _scipy_getattr:
            scipy.__getattr__ = _lazy_getattr
        _lazy_getattr = None
