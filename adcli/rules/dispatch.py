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

Not supported: methods and nested functions (declare a rule for a module-level function they
call), and references captured before the rules module was loaded (use the decorator).
"""

from __future__ import annotations

import functools
import sys

from ..engine import hooks
from ..engine.core import has_tracer
from ..engine.registry import declared_rule
from ..errors import RuleError


def dispatch(func):
    """Make ``func`` a dispatch point: rules declared for it serve traced calls."""
    if getattr(func, "__adcli_original__", None) is not None:
        return func
    module, qualname = key = (func.__module__, func.__qualname__)

    @functools.wraps(func)
    def dispatcher(*args, **kwargs):
        rule = declared_rule(key, args, kwargs)
        if rule is not None and not (has_tracer(args) or has_tracer(kwargs)):
            rule = None  # rules serve traced calls; a plain call runs the function itself
        session = hooks._session
        if session is not None and session.recording():  # a profiler: the call joins its call tree
            if rule is not None:
                return session.numpy_call(module, qualname, rule.source, rule, True, args, kwargs, func=func)
            return session.numpy_call(module, qualname, "derived", func, True, args, kwargs, func=func)
        if rule is not None:
            return rule(*args, **kwargs)
        return func(*args, **kwargs)

    dispatcher.__adcli_original__ = func
    return dispatcher


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
    """The undecorated function ``"module:qualname"`` names, looked up when called (an exported
    rule's forward pass for a script's function uses it: the script runs after the rules load)."""
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name)
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    if obj is None or not callable(obj):
        raise RuleError(f"cannot find {name}: is {module_name} loaded and does it define {qualname}?")
    return getattr(obj, "__adcli_original__", obj)
