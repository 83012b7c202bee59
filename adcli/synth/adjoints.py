"""Adjoints written out in the generated pullback for NumPy functions a person's code calls
often (``np.roll(g, 1, axis=0)`` for ``np.roll(u, -1, axis=0)``), where the engine's gradient of
the call (``call_vjp``: the call run again, traced) would cost more than the call itself.

Each entry takes the call's operand texts (positional values, keyword values by name), the
cotangent's name ``g`` and the answer's (``ans``, or "None" where it is not computed) and returns
``{operand: the expression of its cotangent}`` for the operands it covers, or None for a form it
does not cover (the call then goes through ``call_vjp``); an entry whose expression reads ``ans``
says so (``reads_answer``). Shapes are the operands' at run time, so a written adjoint holds for
every signature; each is checked against the engine's gradient and finite differences
(tests/test_synth.py) and with the rule that uses it (``verify``).
"""

from __future__ import annotations

import numpy as np


def _arg(args: list, kws: dict, i: int, name: str, default=None):
    """A parameter's text, passed by position ``i`` or by ``name``; ``default`` if neither."""
    if i < len(args):
        return args[i]
    return kws.get(name, default)


def _roll(args, kws, g, ans):
    if len(args) < 2 or set(kws) - {"axis", "shift"}:
        return None
    axis = _arg(args, kws, 2, "axis")
    tail = f", axis={axis}" if axis is not None else ""
    return {0: f"_roll_back({g}, {args[1]}{tail})"}


def _where(args, kws, g, ans):
    if len(args) != 3 or kws:
        return None
    c, a, b = args
    return {1: f"_unbroadcast(_np.where({c}, {g}, 0.0), {a})", 2: f"_unbroadcast(_np.where({c}, 0.0, {g}), {b})"}


def _stack(args, kws, g, ans):
    if set(kws) - {"axis"} or len(args) > 2:
        return None
    return {0: f"_unstack({g}, {_arg(args, kws, 1, 'axis', '0')})"}


def _concatenate(args, kws, g, ans):
    if set(kws) - {"axis"} or len(args) > 2:
        return None
    return {0: f"_unconcatenate({g}, {args[0]}, {_arg(args, kws, 1, 'axis', '0')})"}


def _along_axis(written: str, reads_answer: bool = False):
    """A reduction along an axis (``axis=``, ``keepdims=``): its adjoint, ``written`` with the
    cotangent, the answer, the operand, the axis and keepdims filled in."""
    def adjoint(args, kws, g, ans):
        if set(kws) - {"axis", "keepdims"} or len(args) > 2:
            return None
        axis, keep = _arg(args, kws, 1, "axis", "None"), kws.get("keepdims", "False")
        return {0: written.format(g=g, ans=ans, x=args[0], axis=axis, keep=keep)}
    adjoint.reads_answer = reads_answer
    return adjoint


_sum = _along_axis("_spread({g}, {x}, {axis}, {keep})")
_mean = _along_axis("_spread({g}, {x}, {axis}, {keep}, mean=True)")
_extremum = _along_axis("_to_extrema({g}, {ans}, {x}, {axis}, {keep})", reads_answer=True)


def _moment(std: bool):
    def adjoint(args, kws, g, ans):
        if set(kws) - {"axis", "keepdims", "ddof"} or len(args) > 2:
            return None
        axis, keep = _arg(args, kws, 1, "axis", "None"), kws.get("keepdims", "False")
        ddof = kws.get("ddof", "0")
        answer = f", {ans}" if std else ""
        return {0: f"_spread_moment({g}, {args[0]}, {axis}, {keep}, {ddof}{answer})"}
    adjoint.reads_answer = std  # the std's adjoint divides by it
    return adjoint


def _reshaped(args, kws, g, ans):
    return {0: f"_reshape_back({g}, {args[0]})"}


def _transpose(args, kws, g, ans):
    axes = _arg(args, kws, 1, "axes")
    return {0: f"_transpose_back({g})" if axes is None else f"_transpose_back({g}, {axes})"}


def _dot(args, kws, g, ans):
    if len(args) != 2 or kws:
        return None
    a, b = args
    return {0: f"_dot_vjp(0, {g}, {a}, {b})", 1: f"_dot_vjp(1, {g}, {a}, {b})"}


def _full(args, kws, g, ans):
    if set(kws) - {"dtype", "order", "fill_value"}:
        return None
    fill = _arg(args, kws, 1, "fill_value")
    return None if fill is None else {1: f"_unbroadcast({g}, {fill})", "fill_value": f"_unbroadcast({g}, {fill})"}


def _shaped(args, kws, g, ans):
    return {}  # np.zeros_like(x) & co.: x's shape and dtype only, no gradient


def _repeat(args, kws, g, ans):
    return None  # many forms (a count per item): the engine's gradient


#: Parameters that hold no gradient whatever their values (an axis, a shift, a shape), by
#: position (for the written adjoints' functions, after the array) and by name.
INDEX_PARAMS = {np.roll: {1, 2}, np.where: {0}, np.stack: {1}, np.concatenate: {1}, np.sum: {1}, np.mean: {1},
                np.max: {1}, np.min: {1}, np.amax: {1}, np.amin: {1}, np.reshape: {1}, np.squeeze: {1},
                np.expand_dims: {1}, np.transpose: {1}, np.full: {0}, np.full_like: {0}, np.var: {1},
                np.std: {1}, np.empty_like: {0}, np.zeros_like: {0}, np.ones_like: {0}}
INDEX_NAMES = {"axis", "keepdims", "shift", "axes", "newshape", "shape", "dtype", "order", "ddof"}

#: NumPy function -> its written adjoint.
CALLS = {
    np.roll: _roll, np.where: _where, np.stack: _stack, np.concatenate: _concatenate, np.sum: _sum,
    np.mean: _mean, np.max: _extremum, np.min: _extremum, np.amax: _extremum, np.amin: _extremum,
    np.reshape: _reshaped, np.squeeze: _reshaped, np.expand_dims: _reshaped, np.ravel: _reshaped,
    np.transpose: _transpose, np.dot: _dot, np.full: _full, np.full_like: _full, np.var: _moment(False),
    np.std: _moment(True), np.empty_like: _shaped, np.zeros_like: _shaped, np.ones_like: _shaped,
}
#: Methods of an array (``x.sum(axis=0)``): the receiver is operand 0.
METHODS = {
    "sum": _sum, "mean": _mean, "max": _extremum, "min": _extremum, "ravel": _reshaped, "flatten": _reshaped,
    "squeeze": _reshaped, "dot": _dot, "var": _moment(False), "std": _moment(True),
}


def reads_answer(kind: tuple) -> bool:
    """Whether the written adjoint of a call reads its answer (max's, std's)."""
    entry = CALLS.get(kind[1]) if kind[0] == "call" else METHODS.get(kind[1]) if kind[0] == "method" else None
    return getattr(entry, "reads_answer", False)


def written(kind: tuple, args: list, kws: dict, g: str, ans: str):
    """The written adjoint of a call (``("call", f)`` or ``("method", name)``), or None."""
    entry = CALLS.get(kind[1]) if kind[0] == "call" else METHODS.get(kind[1]) if kind[0] == "method" else None
    if entry is None:
        return None
    try:
        return entry(args, kws, g, ans)
    except (IndexError, KeyError):
        return None



def holds_no_gradient(kind: tuple, key) -> bool:
    """Whether operand ``key`` (a position, or a keyword's name) of a call with a written
    adjoint is an axis, a shift or a shape: never differentiated, whatever its value."""
    if kind[0] == "call" and kind[1] in CALLS:
        return key in INDEX_NAMES or key in INDEX_PARAMS.get(kind[1], ())
    if kind[0] == "method" and kind[1] in METHODS and kind[1] != "dot":
        return key in INDEX_NAMES or (isinstance(key, int) and key >= 1)
    return False
