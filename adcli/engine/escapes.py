"""The words of the escape errors: what the user wrote that would read a traced value's raw
numbers, and what to write instead (used by the tracer's dunders, ufunc dispatch and np.copyto)."""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from .where import numpy_entry, user_callee, user_instruction, user_location


def escape_message(what: str, hint: str, why: str = "") -> str:
    """Say what the user wrote that would read a traced value's raw numbers: a NumPy function
    whose Python body converts it (``np.full(3, s)``), a write into a plain array
    (``plain[i] = s``), or the conversion itself (``float(s)``)."""
    loc = user_location(3)
    fn = numpy_entry(2)
    if fn is not None:
        body = "NumPy" if fn.startswith("np.") else "Python"
        return (
            f"{fn}(...) at {loc} converts a traced value to plain numbers (it has no rule, and its {body} body "
            f"reads the raw values): the gradient would be lost. {FUNCTION_HINTS.get(fn, FUNCTION_HINT)}"
        )
    if user_instruction(2) == "STORE_SUBSCR":
        if why:  # the array was made from plain values, and could not be made traced (engine.plain_writes)
            return f"writing a traced value into a plain array at {loc}: {why}"
        return f"writing a traced value into a plain array at {loc}: {PLAIN_WRITE}"
    if what == ARRAY_CONVERSION:
        receiver = (user_callee(2) or "").rpartition(".dot")[0]
        if receiver:  # a.dot(t) of a plain a: ndarray's method converts its argument, with no dispatch
            return (f"{receiver}.dot(...) at {loc} converts a traced argument to plain numbers ({receiver} is a plain "
                    f"array, whose .dot method takes no traced values): the gradient would be lost. Write "
                    f"np.dot({receiver}, ...) or {receiver} @ ... instead (the same product, traced)")
    callee = user_callee(2) if what in _CONVERSIONS else None
    if callee is not None and callee not in _CONVERSIONS[what]:  # math.sin(x) asks float(x) itself
        what = f"{callee}() (which takes {what})"
    return f"{what} of a traced value at {loc}: the number would drop out of the gradient. {hint}"


ARRAY_CONVERSION = "conversion to a plain array (np.asarray / np.array)"
# The conversions a C function asks a traced value for, and the spellings that call them directly.
_CONVERSIONS = {"float()": {"float"}, "int()": {"int"}, "complex()": {"complex"},
                "use as an index": {"operator.index"}}


NUMBER_HINT = (
    "Use NumPy on the traced value instead (np.sin(x), not math.sin(x)); if the value is written into a plain "
    "array, create that array from traced code (np.zeros_like(x), x.copy()) or collect values in a list and "
    "np.stack them; use adcli.stop_gradient(x) where a constant is meant"
)
ARRAY_HINT = (
    "NumPy functions without a rule would see plain numbers: keep the value traced (np.stack / np.concatenate "
    "instead of np.array([...])), or use adcli.stop_gradient(x) where a constant is meant"
)
PLAIN_ARRAY = (
    "the array was not made from traced values (np.zeros(...), np.empty(...), or computed only from arguments "
    "that are not differentiated), so NumPy would store the bare numbers and the gradient would be lost. "
)
PLAIN_WRITE = PLAIN_ARRAY + (
    "Make the array from a traced value instead (np.zeros_like(x), np.empty_like(x, shape=...), x.copy()) or "
    "collect the values in a list and np.stack them; if it comes from an argument left out of argnums, "
    "differentiate that argument too"
)
FUNCTION_HINT = "Import or write a rule for it (`adcli rules list`), or use adcli.stop_gradient(x) where a constant is meant"
FUNCTION_HINTS = {
    "np.full": "Write s * np.ones(shape) (the same numbers), or np.full_like(x, s) with a traced x",
    "np.full_like": "Write s * np.ones_like(a) (the same numbers), or give np.full_like a traced prototype",
}


# --- containers and subclasses beside traced values (core._parents, core.apply2) -------------


def hidden_tracer(name: str, where) -> Exception:
    """A traced value inside a container a rule would read as constant: refused, never dropped."""
    what = f"argument {where}" if isinstance(where, int) else f"{where}="
    return UnsupportedError(f"{name}(...) at {user_location(4)}: its {what} is a container holding a traced value, "
                            "which this rule would read as a constant; pass it as an array (np.stack([...])) "
                            "or as its own argument")


def refuse_subclass(name: str, a) -> None:
    """An ndarray subclass beside a traced value: np.matrix multiplies with ``*`` and a masked
    array skips its masked entries, semantics the engine's rules (written for ndarray) would
    follow only halfway. A memory-mapped array is an ndarray in all but storage, and the
    engine's own views (engine.derive) are its own: both pass."""
    t = type(a)
    if t is np.memmap or getattr(t, "_adcli_own", False):
        return
    if not isinstance(a, np.ndarray):  # an array made by np.zeros & co. (engine.fills) a rule passed on unwrapped
        raise UnsupportedError(f"{name}(...) at {user_location(4)}: an array made by a NumPy constructor reached "
                               "the rule unwrapped (an engine bug: please report it)")
    raise UnsupportedError(f"{name}(...) at {user_location(4)} with a {t.__module__}.{t.__name__} operand beside a "
                           "traced value: adcli follows plain ndarray semantics only; pass np.asarray(...) of it "
                           "(and apply a mask yourself)")
