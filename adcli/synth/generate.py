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

from .analysis import (
    CALLS,
    RUNTIME,
    Program,
    assignments,
    is_active,
    is_append,
    is_write,
    pairs_of,
    pushed,
)
from .expressions import Expressions, adjoint_name, index_value
from .saves import Saves


class Generator(Expressions, Saves):
    def __init__(self, prog: Program):
        self.prog = prog
        self.bindings: dict = {}  # "_vjp_sin_0" -> its definition
        self.labels: dict = {}  # id(loop or if) -> its number
        self.stacks: list = []  # the lists fwd makes: values pushed, nested loops' and ifs' bookkeeping
        self.carried: list = []  # the top-level bookkeeping the pullback receives
        self.special = False  # a VJP of scipy.special's is bound
        self.math = False  # a scalar adjoint calls Python's math
        self.pushes: dict = {}  # id(a call of a user's function) -> the stack its (answer, pullback) go on
        self.owns = False  # the pullback writes into adjoints in place, or reads a container's
        self.n = 0  # temporaries of the statement being reversed
        self.plans: dict = {}  # id(statement) -> its saves.Plan: the values the forward pass keeps for it
        self.meta: dict = {}  # a forward value's name -> (kept?, how to compute it again), for saves.py
        self.fwd_mode = False  # values() names the forward pass's values (saves.py)
        self.vn = 0  # the forward pass's named values

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

    def unkeep(self, name: str, plural: str, depth: int, ind: str) -> list:
        """The pullback's side of ``keep``: inside a loop, this iteration's bookkeeping popped."""
        return [f"{ind}{name} = {plural}.pop()"] if depth else []

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
                if self.saving(s):
                    self.forward_saving(s, depth, ind, out)
                else:
                    out.append(ind + self.with_pushes(s))
            elif self.saving(s):
                t = pairs_of(s)[0][0]
                if pushed(prog, s, t):
                    out.append(f"{ind}{self.stack(t)}.append({t})")
                self.forward_saving(s, depth, ind, out)
            elif isinstance(s, (ast.Assign, ast.Expr)):
                aug = getattr(s, "aug", None)  # y += e: run as written (in place for an array: its old value copied)
                for t, _ in pairs_of(s):
                    if pushed(prog, s, t):
                        out.append(f"{ind}{self.stack(t)}.append({f'_saved({t})' if aug is not None else t})")
                out.append(ind + self.with_pushes(s, aug))
            elif isinstance(s, ast.Pass):
                out.append(ind + "pass")
            elif not self.relevant(s):  # nothing in it is reversed: run it as written
                out += [ind + line for line in ast.unparse(s).splitlines()]
            elif isinstance(s, ast.For):
                if s.target.id in prog.needed:  # read after the loop too: its value before the loop, restored after
                    out.append(f"{ind}{self.stack(s.target.id)}.append({s.target.id})")
                if not self.body_relevant(s):
                    out += [ind + line for line in ast.unparse(s).splitlines()]
                    continue
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

    def with_pushes(self, s, shown=None) -> str:
        """The statement as written, save that a call of the user's own function whose value the
        pullback differentiates runs through its rule, keeping its pullback on a stack
        (``_push(_calls1, (0,), f, x)``: its rule differentiates the operands that carry a
        gradient): the pullback neither runs it again nor traces it."""
        prog = self.prog
        live = [v for t, v in pairs_of(s) if prog.adjoint(t) and is_active(prog, v)]
        calls = [n for v in live for n in self.reached(v) if isinstance(n, ast.Call) and prog.calls[id(n)][0] == "user"]
        shown = s if shown is None else shown
        if not calls:
            return ast.unparse(shown)
        for n in calls:
            name = f"_calls{len(self.pushes) + 1}"
            self.pushes[id(n)] = name
            self.stacks.append(name)
        return ast.unparse(self.rebuilt(shown))

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
        return ast.Call(ast.Name("_push", ast.Load()), [ast.Name(stack, ast.Load()), ast.parse(self.wrt(node)).body[0].value,
                                                        new.func, *new.args], new.keywords)

    def relevant(self, s) -> bool:
        """Whether the pullback reverses anything in ``s``: an adjoint to hand on or reset, a value to pop."""
        prog = self.prog
        if is_append(s):
            t = pairs_of(s)[0][0]
            return prog.adjoint(t) or t in prog.needed
        if isinstance(s, ast.Assign):
            return any(prog.adjoint(t) or pushed(prog, s, t) for t, _ in pairs_of(s))
        if isinstance(s, ast.For) and s.target.id in prog.needed:
            return True  # its variable's value before the loop is restored
        return self.body_relevant(s) if isinstance(s, (ast.For, ast.While, ast.If)) else False

    def body_relevant(self, s) -> bool:
        return any(self.relevant(b) for b in s.body + getattr(s, "orelse", []))

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
                if self.body_relevant(s):
                    k = self.label(s)
                    out += self.unkeep(f"_range{k}", f"_ranges{k}", depth, ind)
                    out.append(f"{ind}for {s.target.id} in reversed(_range{k}):")
                    out += self.backward(s.body, depth + 1, inner) or [inner + "pass"]
                if s.target.id in self.prog.needed:
                    out.append(f"{ind}{s.target.id} = _stack_{s.target.id}.pop()")
            elif isinstance(s, ast.While):
                k = self.label(s)
                out += self.unkeep(f"_count{k}", f"_counts{k}", depth, ind)
                out.append(f"{ind}for _step{k} in range(_count{k}):")
                out += self.backward(s.body, depth + 1, inner) or [inner + "pass"]
            elif isinstance(s, ast.If):
                k = self.label(s)
                out += self.unkeep(f"_branch{k}", f"_branches{k}", depth, ind)
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
        plan = self.plans.get(id(s))  # its values kept by the forward pass, or computed again from the restored names
        roots = {}
        for t, v in live if plan is None else ():
            if self.reads_answer(v):  # the statement's answer is the name's value now
                roots[t] = self.temp("_t")
                out.append(f"{roots[t]} = {t}")
        for t, _ in reversed(pairs):
            if pushed(prog, s, t):
                out.append(self.pop(t))
        if plan is not None:
            out += self.restore(plan)
        for t, v in live:
            vals: dict = {} if plan is None else plan.vals
            if plan is None:
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
        plan = self.plans.get(id(s))
        if plan is not None and g is not None and g != "_":  # its values kept by the forward pass, or computed again
            out += self.restore(plan)
            self.give(v, f"_fit({g}, {plan.vals[id(v)]})", plan.vals, out)
            return out
        if g is not None and g != "_":
            vals: dict = {}
            self.values(v, None, vals, out, want=True)
            self.give(v, f"_fit({g}, {vals[id(v)]})", vals, out)
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

    def module(self) -> str:
        """The rule module's text: its imports, the VJPs it binds, ``fwd`` and ``pullback``."""
        head, bindings, functions = self.parts()
        return "\n".join(head + [""] + bindings + ([""] if bindings else []) + ["", functions])

    def result(self, p: str, raw: bool = False) -> str:
        """A parameter's cotangent: None for one not differentiated (``wrt``: the engine raises if
        it is traced), else its adjoint (``_raw``: as it is, for a caller's synthesized rule)."""
        if p in self.prog.inactive:
            return "None"
        adj = adjoint_name(p) if self.prog.adjoint(p) else "0.0"
        return adj if raw else f"_cotangent({adj}, {p})"

    def parts(self, fwd: str = "fwd", pullback: str = "pullback") -> tuple[list, list, str]:
        """``(header lines and imports, VJP bindings, the two functions' text)``, the functions
        named ``fwd`` and ``pullback`` (an exported module names each rule's pair apart)."""
        prog = self.prog
        fwd_body = self.forward(prog.body, 0, "    ")
        bwd_body = self.backward(prog.body, 0, "    ")
        params = prog.params
        saved = sorted(prog.needed - set(params))
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
            f"    _plain({func.__qualname__!r}, {', '.join(params)})  # a masked array or np.matrix: refused",
            *[f"    {n} = None  # bound before a statement that saves its old value" for n in prebound],
            *[f"    {s} = []" for s in self.stacks],
            *fwd_body,
            f"    return {prog.output}, lambda {out_adj}, _raw=False: {pullback}({', '.join([out_adj] + carried)}, _raw)",
            "",
            "",
            f"def {pullback}({', '.join([out_adj] + carried)}, _raw=False):",
            *[f"    {s} = {s}.copy()  # popped below: the pullback can run again" for s in self.stacks],
            *[f"    {m} = _copy({m})  # written into below, undoing the forward pass's writes" for m in copies],
            *([f"    {out_adj} = _own({out_adj})"] if self.owns else []),
            *[f"    {adjoint_name(n)} = 0.0" for n in sorted(prog.active & prog.useful - {prog.output})],
            *bwd_body,
            "    if _raw:  # for a caller's synthesized rule: the adjoints as they are",
            "        return (" + ", ".join(self.result(p, raw=True) for p in params) + ("," if len(params) == 1 else "") + ")",
            "    return (" + ", ".join(self.result(p) for p in params) + ("," if len(params) == 1 else "") + ")",
            "",
        ]
        text = "\n".join(body)
        head = [
            f"# Generated by adcli.synth from {func.__module__}.{func.__qualname__} ({prog.file}:{prog.offset + 1}):",
            "# its rule by source transformation, verified with adcli.testing.check_rule before use; its free",
            f"# names are {func.__name__}'s globals and closure variables. Regenerate rather than edit.",
            *(["import numpy as _np"] if "_np." in text + "".join(self.bindings.values()) else []),
            *(["import math as _math"] if self.math else []),
            *(["import scipy.special as _special"] if self.special else []),
            "",
            *(["from adcli.engine.registry import UFUNCS as _UFUNCS"] if self.bindings else []),
            *[f"from adcli.synth.{CALLS.get(r, 'runtime')} import {r} as _{r}" for r in RUNTIME
              if f"_{r}(" in text + "\n".join(self.bindings.values())],
        ]
        return head, sorted(self.bindings.values()), text





