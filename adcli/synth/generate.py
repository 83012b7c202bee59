"""The rule module's text, from a :class:`~adcli.synth.analysis.Program`.

``fwd`` runs the user's statements as written (the rewritten forms of analysis.py), and before
a statement overwrites a value the pullback reads, pushes it on that name's stack (a write into
an array pushes the elements it overwrites); a loop keeps its range or its iteration count, an
``if`` which branch ran. ``pullback`` walks the statements backwards with the same names:
reversing ``y = e`` takes y's adjoint, pops y's old value (every name then holds what it held
before the statement), recomputes e's intermediate values from them and hands the adjoint to
e's operands: through the registry's VJPs for arithmetic and ufuncs, summed back to each
operand's shape (``unbroadcast``), as the engine's own nodes do; through the engine's own
gradient of that one call for any other NumPy or SciPy function (``call_vjp``: the call is run
again, traced); through the callee's synthesized rule for a function of the user's.
"""

from __future__ import annotations

import ast

import numpy as np

from ..engine.core import passes
from ..engine.registry import UFUNCS
from . import adjoints
from .analysis import (
    BINARY,
    LINEAR,
    UNARY,
    Program,
    assignments,
    is_active,
    is_append,
    is_write,
    pairs_of,
    pushed,
    reads_answer,
    scalar_op,
)

_LEAVES = (ast.Name, ast.Constant)


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


class Generator:
    def __init__(self, prog: Program):
        self.prog = prog
        self.bindings: dict = {}  # "_vjp_sin_0" -> its definition
        self.labels: dict = {}  # id(loop or if) -> its number
        self.stacks: list = []  # the lists fwd makes: values pushed, nested loops' and ifs' bookkeeping
        self.carried: list = []  # the top-level bookkeeping the pullback receives
        self.special = False  # a VJP of scipy.special's is bound
        self.pushes: dict = {}  # id(a call of a user's function) -> the stack its (answer, pullback) go on
        self.owns = False  # the pullback writes into adjoints in place, or reads a container's
        self.n = 0  # temporaries of the statement being reversed

    # --- fwd ----------------------------------------------------------------------------

    def comment(self, s) -> str:
        return f"# {self.prog.file.rsplit('/', 1)[-1]}:{s.lineno + self.prog.offset}: {self.prog.source_line(s)}"

    def label(self, s) -> int:
        return self.labels.setdefault(id(s), len(self.labels) + 1)

    def keep(self, name: str, plural: str, depth: int, out: list, ind: str) -> None:
        """Bookkeeping made inside a loop is overwritten each iteration: pushed on a stack."""
        if depth:
            self.stacks.append(plural)
            out.append(f"{ind}{plural}.append({name})")
        else:
            self.carried.append(name)

    def stack(self, t: str) -> str:
        if f"_stack_{t}" not in self.stacks:
            self.stacks.append(f"_stack_{t}")
        return f"_stack_{t}"

    def forward(self, stmts, depth: int, ind: str) -> list:
        prog, out = self.prog, []
        for s in stmts:
            out.append(ind + self.comment(s))
            if is_write(s):
                y = s.targets[0].value.id
                if pushed(prog, s, y):  # the elements it overwrites
                    out.append(f"{ind}{self.stack(y)}.append(_saved({ast.unparse(s.targets[0])}))")
                out.append(ind + self.with_pushes(s))
            elif isinstance(s, (ast.Assign, ast.Expr)):
                for t, _ in pairs_of(s):
                    if pushed(prog, s, t):
                        out.append(f"{ind}{self.stack(t)}.append({t})")
                out.append(ind + self.with_pushes(s))
            elif isinstance(s, ast.Pass):
                out.append(ind + "pass")
            elif not self.relevant(s):  # nothing in it is reversed: run it as written
                out += [ind + line for line in ast.unparse(s).splitlines()]
            elif isinstance(s, ast.For):
                k = self.label(s)
                out += [f"{ind}_range{k} = {ast.unparse(s.iter)}", f"{ind}for {s.target.id} in _range{k}:"]
                out += self.forward(s.body, depth + 1, ind + "    ")
                self.keep(f"_range{k}", f"_ranges{k}", depth, out, ind)
            elif isinstance(s, ast.While):
                k = self.label(s)
                out += [f"{ind}_count{k} = 0", f"{ind}while {ast.unparse(s.test)}:", f"{ind}    _count{k} += 1"]
                out += self.forward(s.body, depth + 1, ind + "    ")
                self.keep(f"_count{k}", f"_counts{k}", depth, out, ind)
            elif isinstance(s, ast.If):
                k = self.label(s)
                out += [f"{ind}_branch{k} = bool({ast.unparse(s.test)})", f"{ind}if _branch{k}:"]
                out += self.forward(s.body, depth + 1, ind + "    ")
                if s.orelse:
                    out += [f"{ind}else:"] + self.forward(s.orelse, depth + 1, ind + "    ")
                self.keep(f"_branch{k}", f"_branches{k}", depth, out, ind)
        return out

    def with_pushes(self, s) -> str:
        """The statement as written, save that a call of the user's own function whose value the
        pullback differentiates runs through its rule, keeping its pullback on a stack
        (``_push(_calls1, f, x)``): the pullback neither runs it again nor traces it."""
        prog = self.prog
        live = [v for t, v in pairs_of(s) if prog.adjoint(t) and is_active(prog, v)]
        calls = [n for v in live for n in self.reached(v) if isinstance(n, ast.Call) and prog.calls[id(n)][0] == "user"]
        if not calls:
            return ast.unparse(s)
        for n in calls:
            name = f"_calls{len(self.pushes) + 1}"
            self.pushes[id(n)] = name
            self.stacks.append(name)
        return ast.unparse(self.rebuilt(s))

    def rebuilt(self, node):
        """A copy of ``node`` with the calls in ``pushes`` made through ``_push`` (the program's
        own tree is left as it is: the pullback's generation reads it)."""
        if isinstance(node, list):
            return [self.rebuilt(n) for n in node]
        if not isinstance(node, ast.AST):
            return node
        new = ast.copy_location(type(node)(**{f: self.rebuilt(getattr(node, f)) for f in node._fields
                                              if hasattr(node, f)}), node)
        stack = self.pushes.get(id(node))
        if stack is None:
            return new
        return ast.Call(ast.Name("_push", ast.Load()), [ast.Name(stack, ast.Load()), new.func, *new.args],
                        new.keywords)

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

    def relevant(self, s) -> bool:
        """Whether the pullback reverses anything in ``s``: an adjoint to hand on or reset, a value to pop."""
        prog = self.prog
        if is_append(s):
            t = pairs_of(s)[0][0]
            return prog.adjoint(t) or t in prog.needed
        if isinstance(s, ast.Assign):
            return any(prog.adjoint(t) or pushed(prog, s, t) for t, _ in pairs_of(s))
        if isinstance(s, (ast.For, ast.While, ast.If)):
            return any(self.relevant(b) for b in s.body + getattr(s, "orelse", []))
        return False

    # --- pullback ------------------------------------------------------------------------

    def backward(self, stmts, depth: int, ind: str) -> list:
        out = []
        for s in reversed(stmts):
            if not self.relevant(s):
                continue
            out.append(ind + self.comment(s))
            inner = ind + "    "
            if is_write(s):
                out += [ind + line for line in self.reverse_write(s)]
            elif is_append(s):
                out += [ind + line for line in self.reverse_append(s)]
            elif isinstance(s, ast.Assign):
                out += [ind + line for line in self.reverse_assign(s)]
            elif isinstance(s, ast.For):
                k = self.label(s)
                if depth:
                    out.append(f"{ind}_range{k} = _ranges{k}.pop()")
                out.append(f"{ind}for {s.target.id} in reversed(_range{k}):")
                out += self.backward(s.body, depth + 1, inner) or [inner + "pass"]
            elif isinstance(s, ast.While):
                k = self.label(s)
                if depth:
                    out.append(f"{ind}_count{k} = _counts{k}.pop()")
                out.append(f"{ind}for _step{k} in range(_count{k}):")
                out += self.backward(s.body, depth + 1, inner) or [inner + "pass"]
            elif isinstance(s, ast.If):
                k = self.label(s)
                if depth:
                    out.append(f"{ind}_branch{k} = _branches{k}.pop()")
                out.append(f"{ind}if _branch{k}:")
                out += self.backward(s.body, depth + 1, inner) or [inner + "pass"]
                orelse = self.backward(s.orelse, depth + 1, inner)
                if orelse:
                    out += [f"{ind}else:"] + orelse
        return out

    def pop(self, t: str) -> str:
        """Restore ``t``'s value before the statement (a mutable's as the pullback's own copy)."""
        return f"{t} = _copy(_stack_{t}.pop())" if t in self.prog.mutables else f"{t} = _stack_{t}.pop()"

    def reverse_assign(self, s) -> list:
        prog, out = self.prog, []
        self.n = 0
        pairs = pairs_of(s)
        adj = [(t, v) for t, v in pairs if prog.adjoint(t)]
        live = [(t, v) for t, v in adj if is_active(prog, v)]
        seeds = {}
        for t, _ in live:
            seeds[t] = self.temp("_g")
            out.append(f"{seeds[t]} = {adjoint_name(t)}")
        out += [f"{adjoint_name(t)} = 0.0" for t, _ in adj]  # the value it had before is another one
        roots = {}
        for t, v in live:
            if self.reads_answer(v):  # the statement's answer is the name's value now
                roots[t] = self.temp("_t")
                out.append(f"{roots[t]} = {t}")
        for t, _ in reversed(pairs):
            if pushed(prog, s, t):
                out.append(self.pop(t))
        for t, v in live:
            vals: dict = {}
            self.values(v, roots.get(t), vals, out, want=False)
            self.back(v, seeds[t], vals, out)
        return out

    def reverse_write(self, s) -> list:
        """``y[i] = e``: the adjoint of the elements written goes to e, and is zero in y's before."""
        prog, out = self.prog, []
        self.n = 0
        target = s.targets[0]
        y, v = target.value.id, s.value
        idx = index_value(target.slice)
        g = None
        if prog.adjoint(y):
            self.owns = True
            g = self.temp("_g") if is_active(prog, v) else "_"
            out.append(f"{adjoint_name(y)}, {g} = _take({adjoint_name(y)}, {y}, {idx})")
        if pushed(prog, s, y):
            out.append(f"{ast.unparse(target)} = _stack_{y}.pop()")
        if g is not None and g != "_":
            vals: dict = {}
            self.values(v, None, vals, out, want=True)
            self.give(v, f"_unbroadcast({g}, {vals[id(v)]})", vals, out)
        return out

    def reverse_append(self, s) -> list:
        """``xs.append(e)``: the adjoint of the last item goes to e; the item is popped."""
        prog, out = self.prog, []
        self.n = 0
        t, v = pairs_of(s)[0]
        g = None
        if prog.adjoint(t):
            self.owns = True
            g = self.temp("_g") if is_active(prog, v) else "_"
            out.append(f"{adjoint_name(t)}, {g} = _take_last({adjoint_name(t)}, {t})")
        if t in prog.needed:
            out.append(f"{t}.pop()")
        if g is not None and g != "_":
            vals: dict = {}
            self.values(v, None, vals, out, want=False)
            self.give(v, g, vals, out)
        return out

    def reads_answer(self, v) -> bool:
        return reads_answer(self.prog, v)

    def temp(self, prefix: str) -> str:
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
        else:
            # a scalar sum's adjoints read no operand: they are not computed for it
            inner = want or root is not None or not (hasattr(node, "op") and isinstance(node.op, LINEAR)
                                                     and scalar_op(prog, node))
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
                expr = f"{self.values(node.value, None, vals, out, want=False)}.T"
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
                    expr = f"{ast.unparse(node.func)}({', '.join(args + kws)})"
            if root is not None:
                text = root
            elif want or self.reads_answer(node):
                text = self.temp("_t")
                out.append(f"{text} = {expr}")
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
            self.give(node.value, f"_np.transpose({g})", vals, out)
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
        operands = ", ".join(vals[id(a)] for a in args)
        for k, a in enumerate(args):
            if vjps[k] is None or not is_active(prog, a):
                continue
            c = g if vjps[k] is passes else f"{self.bind(ufunc, k, node)}({g}, {vals[id(node)]}, {operands})"
            self.give(a, f"_unbroadcast({c}, {vals[id(a)]})", vals, out)

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
        vjps = UFUNCS[ufunc].vjps
        operands = ", ".join(vals[id(a)] for a in args)
        for k, a in enumerate(args):
            if vjps[k] is not None and is_active(prog, a):
                c = g if vjps[k] is passes else f"{self.bind(ufunc, k, node)}({g}, {vals[id(node)]}, {operands})"
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
        self.bindings[name] = f"{name} = _UFUNCS[{spelled}].vjps[{k}]"
        return name

    # --- the module ------------------------------------------------------------------------

    def module(self) -> str:
        """The rule module's text: its imports, the VJPs it binds, ``fwd`` and ``pullback``."""
        head, bindings, functions = self.parts()
        return "\n".join(head + [""] + bindings + ([""] if bindings else []) + ["", functions])

    def parts(self, fwd: str = "fwd", pullback: str = "pullback") -> tuple[list, list, str]:
        """``(header lines and imports, VJP bindings, the two functions' text)``, the functions
        named ``fwd`` and ``pullback`` (an exported module names each rule's pair apart)."""
        prog = self.prog
        fwd_body = self.forward(prog.body, 0, "    ")
        bwd_body = self.backward(prog.body, 0, "    ")
        params = prog.params
        saved = sorted(prog.needed - set(params) - prog.loop_vars)
        bound_first = {t for s, pairs, _, _ in assignments(prog.body) if id(s) in prog.first_defs for t, _ in pairs}
        prebound = [n for n in saved if n not in bound_first]
        carried = params + saved + self.stacks + self.carried
        out_adj = adjoint_name(prog.output)
        func = prog.func
        signature = params[:len(params) - len(prog.defaults)] + \
            [f"{p}={d}" for p, d in zip(params[len(params) - len(prog.defaults):], prog.defaults)]
        copies = sorted(m for m in prog.mutables if m in prog.needed)
        body = [
            f"def {fwd}({', '.join(signature)}):",
            *[f"    {n} = None  # bound before a statement that saves its old value" for n in prebound],
            *[f"    {s} = []" for s in self.stacks],
            *fwd_body,
            f"    return {prog.output}, lambda {out_adj}: {pullback}({', '.join([out_adj] + carried)})",
            "",
            "",
            f"def {pullback}({', '.join([out_adj] + carried)}):",
            *[f"    {s} = {s}.copy()  # popped below: the pullback can run again" for s in self.stacks],
            *[f"    {m} = _copy({m})  # written into below, undoing the forward pass's writes" for m in copies],
            *([f"    {out_adj} = _own({out_adj})"] if self.owns else []),
            *[f"    {adjoint_name(n)} = 0.0" for n in sorted(prog.active & prog.useful - {prog.output})],
            *bwd_body,
            "    return (" + ", ".join(f"_cotangent({adjoint_name(p) if prog.adjoint(p) else '0.0'}, {p})"
                                      for p in params) + ("," if len(params) == 1 else "") + ")",
            "",
        ]
        text = "\n".join(body)
        head = [
            f"# Generated by adcli.synth from {func.__module__}.{func.__qualname__} ({prog.file}:{prog.offset + 1}):",
            "# its rule by source transformation, verified with adcli.testing.check_rule before use; its free",
            f"# names are {func.__name__}'s globals and closure variables. Regenerate rather than edit.",
            *(["import numpy as _np"] if "_np." in text + "".join(self.bindings.values()) else []),
            *(["import scipy.special as _special"] if self.special else []),
            "",
            *(["from adcli.engine.registry import UFUNCS as _UFUNCS"] if self.bindings else []),
            *[f"from adcli.synth.runtime import {r} as _{r}" for r in RUNTIME if f"_{r}(" in text],
        ]
        return head, sorted(self.bindings.values()), text




RUNTIME = ("call_vjp", "copy", "pull", "push", "cotangent", "dot_vjp", "item", "method_vjp", "own", "saved", "scatter", "spread",
           "take", "take_last", "to_extrema", "unbroadcast", "unconcatenate", "unstack")
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.MatMult: "@"}
