"""Dispatch points: how a rule for a user's own Python function takes effect.

NumPy hands traced values to the engine through its override protocols; a plain Python
function has no such hook, so the engine sees it only if calls go through a *dispatch point*:
a thin wrapper that, when an argument is traced and a rule matches the call's signature,
applies the rule (one tape node) and otherwise calls the function itself (a derived rule).

There are two ways to get one, both explicit:

1. Declaring a rule (``adcli.rules.rule(mymodule.lml, ...)``) for a function whose module is
   already imported rebinds the module-level name to a dispatch point. Calls that look the
   function up by name at call time see it: calls from inside its module, ``mymodule.lml(...)``,
   and ``from mymodule import lml`` executed *after* the rules were loaded.
2. ``@adcli.rules.dispatch`` on the definition makes the function a dispatch point from the
   start; use it for functions in a script (``__main__``) or ones captured earlier by reference.
   A rule may be declared by name before the function exists: ``rule("__main__:lml", ...)``.

Methods, nested functions and closures are served the same way, by name
(``rule("__main__:make_nn_funs.<locals>.loss", ...)``), wherever their definitions are dispatch
points: under ``adcli profile`` every function the script defines is one. While a rule serves
a call, ``original(name)`` returns the very function object the call was made to (the closure,
with its captured variables). A rule cannot see values a function reads from its closure or
from ``self``: if one of them is traced, the call is refused (RuleError) rather than given a
gradient that misses them.

Not supported: references captured before the rules module was loaded (use the decorator).
"""

from __future__ import annotations

import functools
import sys
import threading

from ..engine import hooks
from ..engine.core import has_tracer
from ..engine.registry import REGISTRY, declared_rule
from ..errors import RuleError


def dispatch(func):
    """Make ``func`` a dispatch point: rules declared for it serve traced calls."""
    if getattr(func, "__adcli_original__", None) is not None:
        return func
    module, qualname = key = (func.__module__, func.__qualname__)

    @functools.wraps(func)
    def dispatcher(*args, **kwargs):
        # rules serve traced calls; a plain call (a rule's own forward calling the function)
        # runs the function itself, without working out its signature
        rule = declared_rule(key, args, kwargs) if key in REGISTRY and (has_tracer(args) or has_tracer(kwargs)) else None
        session = hooks._session
        if rule is not None:
            hidden = _captured_tracer(func, args)
            if hidden is not None:
                raise RuleError(f"the rule declared for {module}:{qualname} cannot serve this call: {hidden} holds a "
                                "traced value, whose gradient a rule cannot return (it sees only the arguments); "
                                "pass it as an argument, or remove the rule")
            stack = _serving.__dict__.setdefault("stack", [])
            stack.append(func)
            try:
                if session is not None:  # a profiler: the call joins its call tree (when it records one)
                    return session.numpy_call(module, qualname, rule.source, rule, True, args, kwargs, func=func)
                return rule(*args, **kwargs)
            finally:
                stack.pop()
        if session is not None:  # numpy_call calls func as it is when no gradient is being recorded
            return session.numpy_call(module, qualname, "derived", func, True, args, kwargs, func=func)
        return func(*args, **kwargs)

    dispatcher.__adcli_original__ = func
    return dispatcher


_serving = threading.local()  # .stack: the functions whose calls rules are serving, innermost last


def _captured_tracer(func, args) -> str | None:
    """What, besides its arguments, a call reads that holds a traced value: a closure variable,
    or an attribute of ``self`` (a method's first argument). None if nothing does."""
    cells = getattr(func, "__closure__", None) or ()
    for name, cell in zip(func.__code__.co_freevars, cells):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (assigned later)
            continue
        if has_tracer(value):
            return f"its closure variable {name!r}"
    params = func.__code__.co_varnames[:func.__code__.co_argcount]
    if args and params and params[0] == "self":
        attrs = getattr(args[0], "__dict__", None)
        if isinstance(attrs, dict):
            for name, value in attrs.items():
                if has_tracer(value):
                    return f"self.{name}"
    return None


def activate(key: tuple) -> bool:
    """Rebind ``module.name`` to a dispatch point if the module is loaded and defines it."""
    module_name, qualname = key
    module = sys.modules.get(module_name)
    if module is None or "." in qualname:
        return False
    func = module.__dict__.get(qualname)
    if func is None or not callable(func):
        return False
    if getattr(func, "__adcli_original__", None) is None:
        module.__dict__[qualname] = dispatch(func)
    return True


def original(name: str):
    """The undecorated function ``"module:qualname"`` names (an exported rule's forward pass
    for a script's function uses it: the script runs after the rules load). Inside a rule that
    serves a call to it, the function the call was made to (a closure with its own captured
    variables); else looked up by its path in the module, else (a closure or nested function a
    module keeps, ``loss = make_loss(data)``) among the module's values."""
    module_name, _, qualname = name.partition(":")
    for func in reversed(getattr(_serving, "stack", ())):
        if (func.__module__, func.__qualname__) == (module_name, qualname):
            return func
    module = sys.modules.get(module_name)
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    if obj is None and module is not None:
        found = [v for v in list(vars(module).values()) if callable(v) and _qualname(v) == qualname]
        obj = found[0] if found else None
    if obj is None or not callable(obj):
        where = "; a closure or nested function is found only while a rule serves it, or when the module keeps it" \
            if "<locals>" in qualname else ""
        raise RuleError(f"cannot find {name}: is {module_name} loaded and does it define {qualname}?{where}")
    return getattr(obj, "__adcli_original__", obj)


def _qualname(v) -> str | None:
    v = getattr(v, "__adcli_original__", v)
    return getattr(v, "__qualname__", None) if isinstance(getattr(v, "__qualname__", None), str) else None
