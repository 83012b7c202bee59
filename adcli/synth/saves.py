"""Values the forward pass keeps for the pullback, rather than the pullback computing them again.

A plain assignment ``y = e`` whose adjoint the pullback hands on is run in the forward pass as
its intermediate values, each bound to a name (``_v1 = kappa * lap``, ``_v2 = vx * dudx``, ...,
``y = _v5``). The pullback's VJPs for the statement are written first, against those names; the
ones they read are then either *kept* (a value made fresh by arithmetic, a ufunc or a NumPy
function that returns a new array: nothing else refers to it, so nothing changes it later), or
*computed again* in the pullback from the restored names (a subscript or attribute, a view, a
list display, a call of the user's function (its answer is on its stack), the value of a name
written into later): those are cheap, or must be read as they were. Kept values go to the
pullback as its arguments (statements outside loops and branches) or, one tuple per run of the
statement, on a stack.

A write into an array (``y[i, j] = np.sin(x[i, j])``) is run and planned the same way (the
elements it overwrites are saved first, as before). An augmented assignment (run in place in the
forward pass) and an append keep nothing of their own: their pullbacks compute their values again.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .analysis import is_active, is_append, is_write, new_value, pairs_of

_NAME = re.compile(r"\b_v\d+\b")
_LEAVES = (ast.Name, ast.Constant)


@dataclass
class Plan:
    """How the pullback of one statement gets the values its VJPs read."""

    vals: dict  # id(node) -> the name of its value (a _v name) or its text (a leaf)
    kept: list  # _v names the forward pass keeps
    again: list  # lines computing the other names the pullback reads, in order
    stack: str | None  # the stack ``kept`` goes on, one tuple per run (inside a loop or branch)


class Saves:
    """The generator's half that plans kept values (its state: ``plans``, ``meta``, ``fwd_mode``, ``vn``)."""

    def saving(self, s) -> bool:
        """Whether ``s`` (``y = e``, ``y[i] = e``) is run as named intermediate values, some kept for its pullback."""
        prog = self.prog
        if not isinstance(s, ast.Assign) or is_append(s) or getattr(s, "aug", None) is not None:
            return False
        pairs = pairs_of(s)
        if len(pairs) != 1:
            return False
        t, v = pairs[0]
        return prog.adjoint(t) and is_active(prog, v) and not isinstance(v, _LEAVES) and \
            any(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Call)) for n in ast.walk(v))

    def fresh_node(self, node) -> bool:
        """Whether ``node``'s value is new and nothing but the kept name refers to it."""
        if isinstance(node, (ast.List, ast.Tuple)):  # holds other values, which may change
            return False
        if isinstance(node, ast.Call) and self.prog.calls[id(node)][0] == "user":
            return False  # the callee may return its argument: its answer is on its stack
        return new_value(self.prog, node)

    def note(self, text: str, node, expr: str, again: str | None = None) -> None:
        """Record (forward mode) how the name ``text`` was computed: kept if fresh, else again."""
        self.meta[text] = (self.fresh_node(node), again or expr)

    def forward_saving(self, s, depth: int, ind: str, out: list) -> None:
        """Emit ``s`` as named values; plan its pullback's reads (``plans[id(s)]``)."""
        prog = self.prog
        t, v = pairs_of(s)[0]
        for n in self.reached(v):  # calls of the user's own functions, through their rules
            if isinstance(n, ast.Call) and prog.calls[id(n)][0] == "user" and id(n) not in self.pushes:
                self.pushes[id(n)] = name = f"_calls{len(self.pushes) + 1}"
                self.stacks.append(name)
        self.fwd_mode, self.meta = True, {}
        vals: dict = {}
        lines: list = []
        try:
            root = self.values(v, None, vals, lines, want=True)
        finally:
            self.fwd_mode = False
        if root in self.meta and not is_write(s) and (t in prog.mutables or t in prog.inplace):  # changed later
            fresh, expr = self.meta[root]
            self.meta[root] = (False, expr)
        shown = ast.unparse(s.targets[0])  # y, or y[i, j] for a write into y
        if lines and lines[-1].startswith(f"{root} = "):  # y = _v3 = a * b
            lines[-1] = f"{shown} = {lines[-1]}"
        else:
            lines.append(f"{shown} = {root}")
        out += [ind + line for line in lines]
        scratch: list = []
        n = self.n
        # the VJPs, to see what they read (written again in the pullback)
        if is_write(s):
            self.give(v, f"_fit(_g, {root})", vals, scratch)
        else:
            self.back(v, "_g", vals, scratch)
        self.n = n
        read = set(_NAME.findall("\n".join(scratch)))
        order = list(self.meta)
        for name in reversed(order):  # what a value computed again reads is read too
            if name in read and not self.meta[name][0]:
                read |= set(_NAME.findall(self.meta[name][1]))
        kept = [name for name in order if name in read and self.meta[name][0]]
        again = [f"{name} = {self.meta[name][1]}" for name in order if name in read and not self.meta[name][0]]
        stack = None
        if kept and depth:
            stack = f"_kept{len(self.plans) + 1}"
            self.stacks.append(stack)
            out.append(f"{ind}{stack}.append(({', '.join(kept)},))")
        elif kept:
            self.carried.extend(kept)
        self.plans[id(s)] = Plan(vals, kept, again, stack)

    def restore(self, plan: Plan) -> list:
        """The pullback's lines before a planned statement's VJPs: its kept values, the others."""
        head = [f"{', '.join(plan.kept)}, = {plan.stack}.pop()"] if plan.stack else []
        return head + plan.again
