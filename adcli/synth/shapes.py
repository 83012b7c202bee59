"""Which values have the same shape on every call of the signature a rule is synthesized for,
so that the cotangent of an elementwise operation's operand needs no summing back
(``_unbroadcast``) where the operand has the result's shape.

Each value gets a *shape symbol*: two values with the same symbol have the same shape on every
call (never concluded from one sample's shapes: only from how the values are made). A parameter
holding an array is its own symbol; a Python scalar is ``SCALAR`` (it broadcasts against
anything and changes no shape); a unary ufunc, a negation, ``np.roll`` and ``np.copy`` keep
their operand's; an elementwise operation of two values with the same symbol, or of one and a
scalar, has that symbol; an int index of a value (``x[i]``, ``for row in x``) shares the symbol
of every such index of it. Anything else has none, and keeps its ``_unbroadcast``. A local's
symbol is the one all its bindings have (an optimistic fixpoint, as kinds.py's).

Only where every float argument is a float64 array or a Python scalar: a float32 operand's
cotangent is also cast back to its dtype by ``_unbroadcast``, which must then stay.
"""

from __future__ import annotations

import ast

import numpy as np

from .kinds import _TOP, INT, fixpoint, kind_of
from .kinds import SCALAR as SCALAR_KIND

SCALAR = "()"  # a Python scalar's symbol
_KEEPS = {np.roll, np.copy}  # NumPy functions (not ufuncs) that return their first argument's shape


def uniform(args) -> bool:
    """Whether the arguments let shapes stand for dtypes too: every float or complex array among
    them (at the top level) float64, and no other float or complex type of array."""
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind in "fc" and a.dtype != np.float64:
            return False
    return True


def infer(prog, binds: list, enabled: bool) -> dict:
    """``{name: symbol}`` of the parameters and locals whose symbol is concluded."""
    if not enabled:
        return {}
    start = {p: ("arg", p) for p, k in prog.param_kinds.items() if isinstance(k, tuple) and k[0] == "array" and k[1] >= 1}
    start.update({p: SCALAR for p, k in prog.kinds.items() if k in (SCALAR_KIND, INT) and p in prog.params})
    bound = {t for _, pairs, _, _ in binds for t, _ in pairs}

    def of_binding(s, v, symbols):
        if isinstance(s, ast.Expr) or isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
            return None  # a list appended to, an array written into
        if v is None:  # a range loop's variable
            return SCALAR if prog.kinds.get(s.target.id) == INT else None
        return symbol(prog, v, symbols)
    own = {t: start.get(t) for t in bound if t in prog.params}  # a parameter's own value (None: no symbol)
    symbols = fixpoint(start, bound, binds, of_binding, own)
    return {n: k for n, k in symbols.items() if k not in (None, _TOP)}


def symbol(prog, node, symbols: dict):
    """The shape symbol of an expression's value (None: not concluded)."""
    if isinstance(node, ast.Constant):
        return SCALAR if type(node.value) in (int, float, bool) else None
    if isinstance(node, ast.Name):
        if node.id in symbols:
            return symbols[node.id]
        return SCALAR if node.id in prog.locals and prog.kinds.get(node.id) in (SCALAR_KIND, INT) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return symbol(prog, node.operand, symbols)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return _combine(symbol(prog, node.left, symbols), symbol(prog, node.right, symbols))
    if isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        base = symbol(prog, node.value, symbols)
        if base in (None, SCALAR) or not all(_int(prog, p) for p in parts):
            return None
        return _TOP if base == _TOP else ("index", base, len(parts))
    if isinstance(node, ast.Call):
        kind = prog.calls.get(id(node))
        if kind is None or not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        if kind[0] == "ufunc" and not node.keywords:
            out = SCALAR
            for a in node.args:
                out = _combine(out, symbol(prog, a, symbols))
            return out
        if kind[0] == "call" and kind[1] in _KEEPS and all(k.arg == "axis" and kind[1] is np.roll for k in node.keywords):
            return symbol(prog, node.args[0], symbols)  # np.roll(x, shift, axis=...): its axis changes no shape
    return None


def _int(prog, node) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    return isinstance(node, ast.Name) and prog.kinds.get(node.id) == INT


def _combine(a, b):
    if a == _TOP or b == _TOP:
        return _TOP
    if a is None or b is None:
        return None
    if a == SCALAR:
        return b
    if b == SCALAR or a == b:
        return a
    return None


def same_shape(prog, operand, node, others=()) -> bool:
    """Whether an elementwise operation's array operand has the result's shape on every call:
    its other operands (``others``) are scalars (a unary ufunc, ``x * 2.0``), or it has the
    result's shape symbol."""
    if not prog.uniform:
        return False
    k = kind_of(prog, operand, prog.kinds)  # (a 0-d array's ufunc answers a scalar: it keeps its _unbroadcast)
    if isinstance(k, tuple) and k[0] == "array" and k[1] >= 1 and \
            all(kind_of(prog, o, prog.kinds) in (SCALAR_KIND, INT) for o in others):
        return True
    shapes = prog.shapes
    a = symbol(prog, operand, shapes)
    return a not in (None, SCALAR, _TOP) and a == symbol(prog, node, shapes)
