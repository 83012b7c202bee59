"""``declare(target, types, fwd, pullback)``: a synthesized rule, as ``adcli export`` writes it
into a rules module, declared for one signature of the user's function ``target``.

The two functions are the synthesizer's text, unchanged: their free names (``np``, the
script's constants and helpers) are the target function's globals and closure variables. So
each runs with those as its globals: bound when the rule first serves a call to a function
object (a closure made again is bound again), the generated module's own names (``_np``,
``_vjp_sin_0``, ``_call_vjp``, ...) added from the rules module.
"""

from __future__ import annotations

import inspect
import types
import weakref

from ..rules.declare import register
from ..rules.dispatch import original
from .analysis import closure_values
from .subset import RESERVED


def bind(func, fwd, pullback):
    """``fwd`` and ``pullback`` with ``func``'s globals and closure variables as their globals
    (plus the rules module's generated names); returns the bound ``fwd``."""
    ns = dict(func.__globals__)
    ns.update(closure_values(func))
    ns.update({k: v for k, v in fwd.__globals__.items() if RESERVED.match(k)})
    ns[pullback.__name__] = types.FunctionType(pullback.__code__, ns, pullback.__name__, pullback.__defaults__)
    return types.FunctionType(fwd.__code__, ns, fwd.__name__, fwd.__defaults__)


def declare(target: str, types_: tuple, fwd, pullback, *, wrt: tuple | None = None, replace: bool = False) -> list:
    """Declare the synthesized rule ``fwd``/``pullback`` for ``target`` ("module:qualname") at
    the signature ``types_`` (descriptors, as ``adcli.rules.rule`` takes them). The pullback's
    cotangents are trimmed to the arguments passed by position (a parameter left to its
    default has none). ``wrt``: the positions it differentiates, when it was synthesized for
    some (its cotangent for another is None: the engine raises where a call traces one; ``adcli
    check`` checks it for those)."""
    bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def rule(*args, **kwargs):
        func = original(target)
        run = bound.get(func)
        if run is None:
            run = bound[func] = bind(func, fwd, pullback)
        ans, pb = run(*args, **kwargs)
        n = len(args)
        return ans, (lambda g: pb(g)[:n])

    rule.__name__ = rule.__qualname__ = fwd.__name__
    rule.__adcli_wrt__ = None if wrt is None else tuple(wrt)
    rule.__doc__ = f"The synthesized rule of {target} ({fwd.__name__}, {pullback.__name__})."
    try:
        origin = f"synthesized, {inspect.getsourcefile(fwd)}:{inspect.getsourcelines(fwd)[1]}"
    except (TypeError, OSError):
        origin = "synthesized"
    return register(target, types_, rule, replace=replace, origin=origin)
