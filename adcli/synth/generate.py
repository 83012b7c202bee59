"""The rule module's text, from a :class:`~adcli.synth.analysis.Program`.

``fwd`` runs the user's statements as written (``y += e`` as ``y = y + e``), and before a
statement overwrites a value the pullback reads, pushes it on that name's stack; a loop keeps
its range or its iteration count, an ``if`` which branch ran. ``pullback`` walks the statements
backwards with the same names: reversing ``y = e`` takes y's adjoint, pops y's old value (every
name then holds what it held before the statement), recomputes e's intermediate values from
them and hands the adjoint to e's operands through the registry's VJPs, summed back to each
operand's shape (``unbroadcast``), as the engine's own nodes do.
"""

from __future__ import annotations

import ast

import numpy as np

from ..engine.core import passes
from ..engine.keep import params_read
from ..engine.registry import UFUNCS
from .analysis import BINARY, UNARY, Program, assignments, is_active, pushed

_LEAVES = (ast.Name, ast.Constant, ast.Attribute)


def adjoint_name(name: str) -> str:
    return "_d_out" if name == "_out" else f"d_{name}"


class Generator:
    def __init__(self, prog: Program):
        self.prog = prog
        self.bindings: dict = {}  # "_vjp_sin_0" -> its definition
        self.labels: dict = {}  # id(loop or if) -> its number
        self.stacks: list = []  # the lists fwd makes: values pushed, nested loops' and ifs' bookkeeping
        self.carried: list = []  # the top-level bookkeeping the pullback receives
        self.scatters = False
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

    def forward(self, stmts, depth: int, ind: str) -> list:
        prog, out = self.prog, []
        for s in stmts:
            out.append(ind + self.comment(s))
            if isinstance(s, ast.Assign):
                for t in _targets(s):
                    if pushed(prog, s, t):
                        if f"_stack_{t}" not in self.stacks:
                            self.stacks.append(f"_stack_{t}")
                        out.append(f"{ind}_stack_{t}.append({t})")
                out.append(ind + ast.unparse(s))
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

    def relevant(self, s) -> bool:
        """Whether the pullback reverses anything in ``s``: an adjoint to hand on or reset, a value to pop."""
        prog = self.prog
        if isinstance(s, ast.Assign):
            return any(prog.adjoint(t) or pushed(prog, s, t) for t in _targets(s))
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
            if isinstance(s, ast.Assign):
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

    def reverse_assign(self, s) -> list:
        prog, out = self.prog, []
        self.n = 0
        pairs = _pairs(s)
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
                out.append(f"{t} = _stack_{t}.pop()")
        for t, v in live:
            vals: dict = {}
            self.values(v, roots.get(t, "None"), vals, out)  # None: no VJP reads the answer
            self.back(v, seeds[t], vals, out)
        return out

    def reads_answer(self, v) -> bool:
        """Whether the VJP at the root of ``v`` reads its answer (exp's does, add's does not)."""
        if isinstance(v, (*_LEAVES, ast.Subscript)):
            return False
        if isinstance(v, ast.Call) and self.prog.calls[id(v)][0] == "sum":
            return False
        ufunc = BINARY.get(type(v.op)) if isinstance(v, ast.BinOp) else UNARY.get(type(v.op)) \
            if isinstance(v, ast.UnaryOp) else self.prog.calls[id(v)][1]
        return any(vjp is not None and vjp is not passes and 1 in (params_read(vjp) or {1})
                   for vjp in UFUNCS[ufunc].vjps)

    def temp(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def values(self, node, root, vals: dict, out: list) -> str:
        """The statement's intermediate values, recomputed from the restored names (the root's is
        the assigned name's value, read before the pop)."""
        prog = self.prog
        if isinstance(node, _LEAVES):
            text = ast.unparse(node)
        elif not is_active(prog, node) or isinstance(node, ast.Compare):
            text = self.temp("_t")
            out.append(f"{text} = {ast.unparse(node)}")
        else:
            if isinstance(node, ast.BinOp):
                a, b = self.values(node.left, None, vals, out), self.values(node.right, None, vals, out)
                expr = f"{a} {_OPS[type(node.op)]} {b}"
            elif isinstance(node, ast.UnaryOp):
                expr = f"{'-' if isinstance(node.op, ast.USub) else '+'}{self.values(node.operand, None, vals, out)}"
            elif isinstance(node, ast.Subscript):
                expr = f"{node.value.id}[{self.values(node.slice, None, vals, out)}]"
            else:  # a call
                args = [self.values(a, None, vals, out) for a in node.args]
                expr = f"{ast.unparse(node.func)}({', '.join(args)})"
            if root is not None:
                text = root
            else:
                text = self.temp("_t")
                out.append(f"{text} = {expr}")
        vals[id(node)] = text
        return text

    def back(self, node, g: str, vals: dict, out: list) -> None:
        """Hand the cotangent ``g`` (a name holding it, shaped as node's value) to node's operands."""
        prog = self.prog
        if isinstance(node, ast.Name):
            if prog.adjoint(node.id):
                out.append(f"{adjoint_name(node.id)} = {adjoint_name(node.id)} + {g}")
            return
        if isinstance(node, ast.Subscript):
            x = node.value.id
            if prog.adjoint(x):
                self.scatters = True
                out.append(f"{adjoint_name(x)} = _scatter({adjoint_name(x)}, {x}, {vals[id(node.slice)]}, {g})")
            return
        if isinstance(node, ast.Call) and prog.calls[id(node)][0] == "sum":
            arg = node.args[0]
            self.give(arg, f"_unbroadcast({g}, {vals[id(arg)]})", vals, out)  # a full sum: g spread over a
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

    def give(self, node, c: str, vals: dict, out: list) -> None:
        if isinstance(node, ast.Name):
            if self.prog.adjoint(node.id):
                out.append(f"{adjoint_name(node.id)} = {adjoint_name(node.id)} + {c}")
            return
        g = self.temp("_g")
        out.append(f"{g} = {c}")
        self.back(node, g, vals, out)

    def bind(self, ufunc, k: int, node) -> str:
        """The module-level name of the registry's VJP of ``ufunc``'s argument k."""
        name = f"_vjp_{ufunc.__name__}_{k}"
        spelled = f"_np.{ufunc.__name__}" if getattr(np, ufunc.__name__, None) is ufunc else ast.unparse(node.func)
        self.bindings[name] = f"{name} = _UFUNCS[{spelled}].vjps[{k}]"
        return name

    # --- the module ------------------------------------------------------------------------

    def module(self) -> str:
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
        lines = [
            f"# Generated by adcli.synth from {func.__module__}.{func.__qualname__} ({prog.file}:{prog.offset + 1}):",
            "# its rule by source transformation, verified with adcli.testing.check_rule before use; its free",
            f"# names are {func.__name__}'s globals and closure variables. Regenerate rather than edit.",
            "import numpy as _np",
            "",
            "from adcli.engine.registry import UFUNCS as _UFUNCS",
            "from adcli.synth.runtime import cotangent as _cotangent",
            "from adcli.synth.runtime import own as _own",
            "from adcli.synth.runtime import scatter as _scatter",
            "from adcli.synth.runtime import unbroadcast as _unbroadcast",
            "",
            *[*sorted(self.bindings.values()), ""][:len(self.bindings) + bool(self.bindings)],
            "",
            f"def fwd({', '.join(params)}):",
            *[f"    {n} = None  # bound before a statement that saves its old value" for n in prebound],
            *[f"    {s} = []" for s in self.stacks],
            *fwd_body,
            f"    return {prog.output}, lambda {out_adj}: pullback({', '.join([out_adj] + carried)})",
            "",
            "",
            f"def pullback({', '.join([out_adj] + carried)}):",
            *[f"    {s} = {s}.copy()  # popped below: the pullback can run again" for s in self.stacks],
            *([f"    {out_adj} = _own({out_adj})"] if self.scatters else []),
            *[f"    {adjoint_name(n)} = 0.0" for n in sorted(prog.active & prog.useful - {prog.output})],
            *bwd_body,
            "    return (" + ", ".join(f"_cotangent({adjoint_name(p) if prog.adjoint(p) else '0.0'}, {p})"
                                      for p in params) + ("," if len(params) == 1 else "") + ")",
            "",
        ]
        return "\n".join(lines)


_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _targets(s) -> list:
    t = s.targets[0]
    return [t.id] if isinstance(t, ast.Name) else [e.id for e in t.elts]


def _pairs(s) -> list:
    t = s.targets[0]
    return [(t.id, s.value)] if isinstance(t, ast.Name) else [(e.id, v) for e, v in zip(t.elts, s.value.elts)]
