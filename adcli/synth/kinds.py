"""What kind of value each name holds, from the concrete signature a rule is synthesized for:
a float scalar, an int, an array of a known number of dimensions, or not known.

The kinds of the parameters come from the signature (``of_value`` on a sample's arguments, which
the rule is declared for: the same types and dimensions on every call it serves); those of the
function's globals and closure variables from their values; a local's is the one kind all its
bindings have, found by an optimistic fixpoint over the assignments (a name bound in a loop to
``y * a`` is a scalar if y starts as one and a is one). Only what holds for every call of the
signature is concluded: an index of a one-dimensional float array by an int is a float scalar;
arithmetic and ufuncs of scalars are scalars; ``np.sum(a)`` is one. The generator then writes a
scalar's adjoints as plain arithmetic (``d_a = d_a + _g1 * y``): no broadcasting to undo, and
no value kept for its shape alone.
"""

from __future__ import annotations

import ast
import builtins

import numpy as np

SCALAR, INT = "scalar", "int"
_TOP = "?"  # not concluded yet (the fixpoint's start)


def of_value(v):
    """A value's kind: SCALAR, INT, ("array", ndim, dtype kind), or None."""
    t = type(v)
    if t is float:  # the common cases first (a synthesized callee's rule is looked up by them, per call)
        return SCALAR
    if t is np.ndarray:
        return ("array", v.ndim, v.dtype.kind)
    if isinstance(v, (bool, int, np.integer, np.bool_)):
        return INT
    if isinstance(v, (float, np.floating)):
        return SCALAR
    if isinstance(v, np.ndarray):
        return ("array", v.ndim, v.dtype.kind)
    return None


def infer(prog, param_kinds: dict, scope: dict, binds: list) -> dict:
    """``{name: kind}`` for the parameters (``param_kinds``), the globals the function reads
    (from ``scope``) and the locals (the fixpoint); a name of no concluded kind is left out."""
    kinds = {n: k for n, k in param_kinds.items() if k is not None}
    for node in ast.walk(ast.Module([s for s, _, _, _ in binds], [])):
        if isinstance(node, ast.Name) and node.id not in prog.locals and node.id in scope:
            k = of_value(scope[node.id])
            if k is not None:
                kinds.setdefault(node.id, k)
    bound = {t for _, pairs, _, _ in binds for t, _ in pairs}  # a parameter rebound too: its kind is every value's

    def of_binding(s, v, kinds):
        if isinstance(s, ast.For):  # a range loop's variable
            return INT
        if isinstance(s, ast.Expr) or isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
            return None  # a list appended to, an array written into: not a scalar
        return kind_of(prog, v, kinds)
    own = {t: param_kinds.get(t) for t in bound if t in prog.params}  # a parameter's own value: from the signature
    kinds = fixpoint(kinds, bound, binds, of_binding, own)
    return {n: k for n, k in kinds.items() if k not in (None, _TOP)}


def fixpoint(values: dict, bound: set, binds: list, of_binding, own: dict) -> dict:
    """``values`` with each name in ``bound`` given the one value all its bindings have
    (``of_binding(stmt, value node, values)``, and ``own[name]`` for a parameter's own value),
    None where they differ: an optimistic fixpoint from "not concluded yet" (``_TOP``)."""
    values = {**values, **{t: _TOP for t in bound}}
    for _ in range(20):
        new = dict(values)
        for t in bound:
            found = [own[t]] if t in own else []
            found += [of_binding(s, v, values) for s, pairs, _, _ in binds for name, v in pairs if name == t]
            concluded = [k for k in found if k != _TOP]
            new[t] = _TOP if not concluded else concluded[0] if all(k == concluded[0] for k in concluded) else None
        if new == values:
            break
        values = new
    return values


def kind_of(prog, node, kinds: dict):
    """The kind of an expression's value, given the names' kinds (None: not concluded)."""
    if isinstance(node, ast.Constant):
        v = node.value
        return INT if type(v) in (int, bool) else SCALAR if type(v) is float else None
    if isinstance(node, ast.Name):
        return kinds.get(node.id)
    if isinstance(node, ast.Attribute) and node.attr not in ("T", "shape", "ndim", "size", "dtype"):
        base, names = node, []  # np.pi: a constant of a module or a global
        while isinstance(base, ast.Attribute):
            names.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id not in prog.locals and base.id in prog.scope:
            value = prog.scope[base.id]
            for name in reversed(names):
                value = getattr(value, name, None)
            return of_value(value)
        return None
    if isinstance(node, ast.Subscript):
        base = kind_of(prog, node.value, kinds)
        if not (isinstance(base, tuple) and base[0] == "array"):
            return _TOP if base == _TOP else None
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(p, ast.Slice) for p in parts):
            return None
        pk = [kind_of(prog, p, kinds) for p in parts]
        if _TOP in pk:
            return _TOP
        if not all(k == INT for k in pk) or len(parts) > base[1]:
            return None
        left = base[1] - len(parts)
        if left:
            return ("array", left, base[2])
        return SCALAR if base[2] == "f" else INT if base[2] in "iub" else None
    if isinstance(node, ast.UnaryOp):
        k = kind_of(prog, node.operand, kinds)
        return k if isinstance(node.op, (ast.USub, ast.UAdd)) else None
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            return None
        return _combine([kind_of(prog, node.left, kinds), kind_of(prog, node.right, kinds)],
                        isinstance(node.op, (ast.Div, ast.Pow)))
    if isinstance(node, ast.Call):
        kind = prog.calls.get(id(node))
        if kind is None:
            return None
        if kind[0] == "ufunc":
            return _combine([kind_of(prog, a, kinds) for a in node.args], True)
        if kind[0] == "sum":
            k = kind_of(prog, node.args[0], kinds)
            return _TOP if k == _TOP else SCALAR if k == SCALAR or isinstance(k, tuple) and k[2] == "f" else None
        if kind[0] == "plain":
            return INT if kind[1] in (builtins.len, builtins.int, builtins.round) else \
                SCALAR if kind[1] is builtins.float else None
    return None


def _combine(ks: list, to_float: bool):
    """The kind of an elementwise operation's result."""
    if _TOP in ks:
        return _TOP
    if any(k is None for k in ks):
        return None
    arrays = [k for k in ks if isinstance(k, tuple)]
    if not arrays:
        return INT if all(k == INT for k in ks) and not to_float else SCALAR
    float_ = to_float or any(k == SCALAR for k in ks) or any(a[2] == "f" for a in arrays)
    return ("array", max(a[1] for a in arrays), "f" if float_ else arrays[0][2])
