"""The pullback's expressions: a statement's intermediate values recomputed from the restored
names (``values``) and its cotangent handed down to its operands (``back``): through the
registry's VJPs summed back to each operand's shape, as plain arithmetic for scalars
(kinds.py), through written adjoints (adjoints.py), a callee's kept pullback, or the engine's
gradient of one call. generate.py's Generator walks the statements and calls these.
"""

from __future__ import annotations

import ast

import numpy as np

from ..engine.core import passes
from ..engine.keep import params_read
from ..engine.registry import UFUNCS
from . import adjoints
from .analysis import BINARY, LINEAR, UNARY, is_active, reads_answer, scalar_op
from .shapes import same_shape

_LEAVES = (ast.Name, ast.Constant)
#: The adjoints of ufuncs of one float scalar, written out (the registry's VJPs, on a scalar:
#: Python's math on a float is many times faster than NumPy's functions on a NumPy scalar).
_SCALAR_VJPS = {np.sin: "{g} * _math.cos({x})", np.cos: "-{g} * _math.sin({x})", np.exp: "{g} * {ans}",
                np.tanh: "{g} * (1.0 - {ans} * {ans})", np.sqrt: "{g} * 0.5 / {ans}", np.log: "{g} / {x}"}


def _shape_read_positions(vjp) -> list:
    """Positions of the parameters a VJP reads for their shape alone (engine.keep.shape_read)."""
    names = getattr(vjp, "__adcli_shape_read__", ())
    code = getattr(vjp, "__code__", None)
    params = code.co_varnames[:code.co_argcount] if code is not None else ()
    return [k for k, p in enumerate(params) if p in names]

#: NumPy functions the forward pass calls as the engine's own kernels (the same values and
#: layout, without NumPy's argument handling: np.roll's costs several times its copies on small
#: arrays): runtime.py's names for them.
_KERNELS = {np.roll: "_roll"}


def adjoint_name(name: str) -> str:
    return "_d_out" if name == "_out" else f"d_{name}"


def slice_text(node) -> str:
    """A subscript's index as written between the brackets (``:, None``, not ``(:, None)``)."""
    return ast.unparse(ast.Subscript(ast.Name("x", ast.Load()), node, ast.Load()))[2:-1]


def index_value(node) -> str:
    """A subscript's index as a value: ``(i, j)``, ``_np.s_[1:, i]`` for slices."""
    text = slice_text(node)
    if any(isinstance(n, ast.Slice) for n in ast.walk(node)):
        return f"_np.s_[{text}]"
    return f"({text})" if isinstance(node, ast.Tuple) else text

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.MatMult: "@"}


class Expressions:
    """The expression half of the generator (its state: ``prog``, ``bindings``, ``pushes``,
    ``owns``, ``special``, ``n``)."""

    def reached(self, node):
        """The active nodes of an expression its pullback's back() visits (as back() walks it)."""
        prog = self.prog
        if not is_active(prog, node):
            return
        yield node
        if isinstance(node, ast.Subscript):
            yield from self.reached(node.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                yield from self.reached(e)
        elif isinstance(node, ast.Attribute):
            yield from self.reached(node.value)
        elif isinstance(node, ast.BinOp):
            vjps = UFUNCS[BINARY[type(node.op)]].vjps
            for k, a in enumerate([node.left, node.right]):
                if vjps[k] is not None:
                    yield from self.reached(a)
        elif isinstance(node, ast.UnaryOp):
            yield from self.reached(node.operand)
        elif isinstance(node, ast.Call):
            kind = prog.calls[id(node)]
            if kind[0] == "ufunc":
                vjps = UFUNCS[kind[1]].vjps
                operands = [a for k, a in enumerate(node.args) if vjps[k] is not None]
            else:  # as back_call hands on cotangents
                keyed = list(enumerate(([node.func.value] if kind[0] == "method" else []) + list(node.args)))
                keyed += [(k.arg, k.value) for k in node.keywords]
                pushed_call = id(node) in self.pushes or kind[0] == "user"
                operands = [a for k, a in keyed if pushed_call or not adjoints.holds_no_gradient(kind, k)]
            for a in operands:
                yield from self.reached(a)

    def wrt(self, call) -> str:
        """The operands of a call of the user's function that carry a gradient: its rule's ``wrt``."""
        keys = [k for k, a in enumerate(call.args) if is_active(self.prog, a)]
        keys += [kw.arg for kw in call.keywords if is_active(self.prog, kw.value)]
        return "(" + ", ".join(map(repr, keys)) + ("," if len(keys) == 1 else "") + ")"

    def reads_answer(self, v) -> bool:
        return reads_answer(self.prog, v)

    def temp(self, prefix: str) -> str:
        if self.fwd_mode and prefix == "_t":  # a value the forward pass names (saves.py): unique in the rule
            self.vn += 1
            return f"_v{self.vn}"
        self.n += 1
        return f"{prefix}{self.n}"

    def values(self, node, root, vals: dict, out: list, want: bool = True) -> str:
        """The statement's intermediate values, recomputed from the restored names (the root's is
        the assigned name's value, read before the pop). ``want``: whether a VJP reads this
        value (a root's, an item of a list display's, is not computed unless its own VJP reads it)."""
        prog = self.prog
        if isinstance(node, _LEAVES) or (isinstance(node, ast.Attribute) and not is_active(prog, node)) or \
                (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)):  # -1
            text = ast.unparse(node)
        elif not is_active(prog, node) or isinstance(node, ast.Compare):
            text = self.temp("_t")
            out.append(f"{text} = {ast.unparse(node)}")
            if self.fwd_mode:
                self.note(text, node, ast.unparse(node))
        else:
            # a scalar sum's adjoints read no operand: they are not computed for it
            inner = want or root is not None or not (hasattr(node, "op") and isinstance(node.op, LINEAR)
                                                     and scalar_op(prog, node))
            again = None
            if isinstance(node, ast.BinOp):
                a = self.values(node.left, None, vals, out, want=inner)
                b = self.values(node.right, None, vals, out, want=inner)
                expr = f"{a} {_OPS[type(node.op)]} {b}"
            elif isinstance(node, ast.UnaryOp):
                operand = self.values(node.operand, None, vals, out, want=inner)
                expr = f"{'-' if isinstance(node.op, ast.USub) else '+'}{operand}"
            elif isinstance(node, ast.Subscript):
                expr = f"{self.values(node.value, None, vals, out)}[{slice_text(node.slice)}]"
            elif isinstance(node, (ast.List, ast.Tuple)):
                items = [self.values(e, None, vals, out, want=want) for e in node.elts]
                expr = f"[{', '.join(items)}]" if isinstance(node, ast.List) else \
                    f"({', '.join(items)}{',' if len(items) == 1 else ''})"
            elif isinstance(node, ast.Attribute):  # .T
                expr = f"{self.values(node.value, None, vals, out)}.T"
            elif id(node) in self.pushes and self.fwd_mode:  # run through its rule, its pullback kept
                args = [self.values(a, None, vals, out) for a in node.args]
                kws = [f"{k.arg}={self.values(k.value, None, vals, out)}" for k in node.keywords]
                stack = self.pushes[id(node)]
                expr = f"_push({', '.join([stack, self.wrt(node), ast.unparse(node.func)] + args + kws)})"
                again = f"{stack}[-1][0]"
            elif id(node) in self.pushes:  # its answer, kept with its pullback (its operands' for their adjoints)
                for a in [*node.args, *(k.value for k in node.keywords)]:
                    self.values(a, None, vals, out, want=False)
                expr = f"{self.pushes[id(node)]}[-1][0]"
            else:  # a call
                kind = prog.calls[id(node)]
                args = [self.values(a, None, vals, out) for a in node.args]
                kws = [f"{k.arg}={self.values(k.value, None, vals, out)}" for k in node.keywords]
                if kind[0] == "method":
                    recv = self.values(node.func.value, None, vals, out)
                    expr = f"{recv}.{kind[1]}({', '.join(args + kws)})"
                else:
                    func = _KERNELS.get(kind[1], ast.unparse(node.func)) if self.fwd_mode and kind[0] == "call" else \
                        ast.unparse(node.func)
                    expr = f"{func}({', '.join(args + kws)})"
            if root is not None:
                text = root
            elif want or self.reads_answer(node):
                text = self.temp("_t")
                out.append(f"{text} = {expr}")
                if self.fwd_mode:
                    self.note(text, node, expr, again)
            else:
                text = "None"  # no VJP reads it
        vals[id(node)] = text
        return text

    def back(self, node, g: str, vals: dict, out: list) -> None:
        """Hand the cotangent ``g`` (a name holding it, shaped as node's value) to node's operands."""
        prog = self.prog
        if isinstance(node, ast.Name):
            if prog.adjoint(node.id):
                out.append(f"{adjoint_name(node.id)} = {adjoint_name(node.id)} + {g}")
            return
        if not is_active(prog, node):
            return
        if isinstance(node, ast.Subscript):
            base, idx = node.value, index_value(node.slice)
            self.owns = True
            if isinstance(base, ast.Name):
                if prog.adjoint(base.id):
                    out.append(f"{adjoint_name(base.id)} = _scatter({adjoint_name(base.id)}, {base.id}, {idx}, {g})")
                return
            c = self.temp("_g")
            out.append(f"{c} = _scatter(0.0, {vals[id(base)]}, {idx}, {g})")
            self.back(base, c, vals, out)
            return
        if isinstance(node, (ast.List, ast.Tuple)):
            self.owns = True
            for k, e in enumerate(node.elts):
                if is_active(prog, e):
                    self.give(e, f"_item({g}, {k})", vals, out)
            return
        if isinstance(node, ast.Attribute):  # .T
            self.give(node.value, f"_transpose_back({g})", vals, out)
            return
        if isinstance(node, ast.Call) and prog.calls[id(node)][0] == "sum":
            arg = node.args[0]
            self.give(arg, f"_unbroadcast({g}, {vals[id(arg)]})", vals, out)  # a full sum: g spread over a
            return
        if isinstance(node, ast.Call) and prog.calls[id(node)][0] in ("call", "user", "method"):
            self.back_call(node, g, vals, out)
            return
        if scalar_op(prog, node):
            self.back_scalar(node, g, vals, out)
            return
        if isinstance(node, ast.BinOp):
            ufunc, args = BINARY[type(node.op)], [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            ufunc, args = UNARY[type(node.op)], [node.operand]
        else:
            ufunc, args = prog.calls[id(node)][1], node.args
        vjps = UFUNCS[ufunc].vjps
        for k, a in enumerate(args):
            if vjps[k] is None or not is_active(prog, a):
                continue
            c = g if vjps[k] is passes else f"{self.bind(ufunc, k, node)}({self.vjp_args(vjps[k], g, node, args, vals)})"
            # an operand of the result's shape on every call (shapes.py) needs no summing back
            others = [o for o in args if o is not a]
            self.give(a, c if same_shape(prog, a, node, others) else f"_unbroadcast({c}, {vals[id(a)]})", vals, out)

    @staticmethod
    def vjp_args(vjp, g: str, node, args, vals: dict) -> str:
        """A registry VJP's arguments ``g, ans, *operands``: None for a value it does not read
        (engine.keep.params_read: mul's reads no answer), so the forward pass need not keep it."""
        texts = [g, vals[id(node)], *(vals[id(a)] for a in args)]
        read = params_read(vjp) or set(range(len(texts)))
        read |= set(_shape_read_positions(vjp))
        return ", ".join(t if k == 0 or k in read else "None" for k, t in enumerate(texts))

    def back_scalar(self, node, g: str, vals: dict, out: list) -> None:
        """Arithmetic and ufuncs on scalars: the adjoints as plain expressions (+ - * / written
        out, the registry's VJP for the others), with no broadcasting to undo."""
        prog = self.prog
        op = getattr(node, "op", None)
        if isinstance(node, ast.BinOp) and isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = node.left, node.right
            va, vb = vals.get(id(a)), vals.get(id(b))
            written = {ast.Add: (g, g), ast.Sub: (g, f"-{g}"), ast.Mult: (f"{g} * {vb}", f"{g} * {va}"),
                       ast.Div: (f"{g} / {vb}", f"-{g} * {va} / ({vb} * {vb})")}[type(op)]
            for operand, c in zip((a, b), written):
                if is_active(prog, operand):
                    self.give(operand, c, vals, out)
            return
        if isinstance(node, ast.UnaryOp):
            self.give(node.operand, f"-{g}" if isinstance(op, ast.USub) else g, vals, out)
            return
        ufunc, args = (BINARY[type(op)], [node.left, node.right]) if isinstance(node, ast.BinOp) else \
            (prog.calls[id(node)][1], node.args)
        if ufunc in _SCALAR_VJPS and len(args) == 1 and not getattr(node, "keywords", ()):  # written out: no NumPy scalar calls
            self.math = self.math or "_math." in _SCALAR_VJPS[ufunc]
            self.give(args[0], _SCALAR_VJPS[ufunc].format(g=g, x=vals[id(args[0])], ans=vals[id(node)]), vals, out)
            return
        vjps = UFUNCS[ufunc].vjps
        for k, a in enumerate(args):
            if vjps[k] is not None and is_active(prog, a):
                c = g if vjps[k] is passes else \
                    f"{self.bind(ufunc, k, node)}({self.vjp_args(vjps[k], g, node, args, vals)})"
                self.give(a, c, vals, out)

    def back_call(self, node, g: str, vals: dict, out: list) -> None:
        """Any other call: the engine's gradient of that call (or the callee's synthesized rule).
        Its differentiable operands are its receiver (a method's), positional arguments by
        position and keyword arguments by name."""
        prog = self.prog
        kind = prog.calls[id(node)]
        operands = ([node.func.value] if kind[0] == "method" else []) + list(node.args)
        active = [(k, a) for k, a in enumerate(operands) if is_active(prog, a)]
        active += [(kw.arg, kw.value) for kw in node.keywords if is_active(prog, kw.value)]
        if id(node) in self.pushes:  # the call's own pullback, kept by the forward pass
            nums = "(" + ", ".join(repr(k) for k, _ in active) + ("," if len(active) == 1 else "") + ")"
            c = self.temp("_c")
            out.append(f"{c} = _pull({self.pushes[id(node)]}.pop(), {g}, {nums})")
            for j, (_, a) in enumerate(active):
                self.give(a, f"{c}[{j}]", vals, out)
            return
        active = [(k, a) for k, a in active if not adjoints.holds_no_gradient(kind, k)]
        texts = [vals[id(a)] for a in operands]
        written = adjoints.written(kind, texts, {kw.arg: vals[id(kw.value)] for kw in node.keywords}, g,
                                   vals[id(node)])
        if written is not None and all(k in written for k, _ in active):  # written out, no engine
            for k, a in active:
                self.give(a, written[k], vals, out)
            return
        self.owns = True
        kws = "{" + ", ".join(f"{kw.arg!r}: {vals[id(kw.value)]}" for kw in node.keywords) + "}"
        args = "(" + ", ".join(vals[id(a)] for a in operands) + ("," if len(operands) == 1 else "") + ")"
        nums = "(" + ", ".join(repr(k) for k, _ in active) + ("," if len(active) == 1 else "") + ")"
        c = self.temp("_c")
        if kind[0] == "method":
            out.append(f"{c} = _method_vjp({kind[1]!r}, {args}, {kws}, {nums}, {g})")
        else:
            out.append(f"{c} = _call_vjp({ast.unparse(node.func)}, {args}, {kws}, {nums}, {g})")
        for j, (_, a) in enumerate(active):
            self.give(a, f"{c}[{j}]", vals, out)

    def give(self, node, c: str, vals: dict, out: list) -> None:
        if isinstance(node, ast.Name):
            if self.prog.adjoint(node.id):
                d = adjoint_name(node.id)
                simple = c.startswith("-") and c[1:].replace("_", "").isalnum()
                out.append(f"{d} = {d} - {c[1:]}" if simple else f"{d} = {d} + {c}")
            return
        g = self.temp("_g")
        out.append(f"{g} = {c}")
        self.back(node, g, vals, out)

    def bind(self, ufunc, k: int, node) -> str:
        """The module-level name of the registry's VJP of ``ufunc``'s argument k."""
        name = f"_vjp_{ufunc.__name__}_{k}"
        spelled = f"_np.{ufunc.__name__}" if getattr(np, ufunc.__name__, None) is ufunc else \
            f"_special.{ufunc.__name__}"  # SciPy's (the subset takes no other ufuncs with rules)
        if not spelled.startswith("_np."):
            self.special = True
        vjp = f"_UFUNCS[{spelled}].vjps[{k}]"
        # a generalized ufunc's VJP (matmul's) needs a cotangent with its core dimensions: an
        # adjoint nothing reached (0.0) passes it by
        self.bindings[name] = f"{name} = _zero_passing({vjp})" if ufunc.signature else f"{name} = {vjp}"
        return name

    # --- the module ------------------------------------------------------------------------
