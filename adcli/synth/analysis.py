"""What a function's source says, for the synthesizer: its statements in the subset (anything
else refused, naming the construct and ``file:line``), the callables it names (by identity), and
which names carry a gradient.

Three sets of names decide what the generated rule computes and keeps:

* *active*: a name that may hold a value depending on a parameter through differentiable
  operations (every parameter is; a loop counter, ``len(x)`` or a comparison is not);
* *useful*: a name whose value reaches the returned one through differentiable operations;
  adjoints exist only for names both active and useful (no dead adjoints);
* *needed*: a name the pullback reads (the operands of the statements it reverses, and the
  parameters): its values are restored statement by statement, so one a later statement
  overwrites is saved on a stack first; one never overwritten is not saved.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import re
import textwrap
from dataclasses import dataclass, field

import numpy as np

from ..engine.registry import UFUNCS
from ..errors import SynthesisError

#: Python's arithmetic operators, as the ufuncs whose native VJPs differentiate them.
BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide, ast.Pow: np.power}
UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}

# Names the generated module uses for itself; a function using one is refused (it would be shadowed).
_RESERVED = re.compile(r"^(_np|_UFUNCS|_unbroadcast|_scatter|_cotangent|_own|fwd|pullback|_vjp_\w+|_stack_\w+|"
                       r"_(count|counts|range|ranges|branch|branches|step|t|g)\d+|_out|_d_out|d_\w+)$")

_WORDS = {
    ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.With: "a with statement", ast.AsyncWith: "a with statement",
    ast.Lambda: "a lambda", ast.Try: "a try statement", ast.Break: "a break", ast.Continue: "a continue",
    ast.Raise: "a raise statement", ast.Assert: "an assert statement", ast.Delete: "a del statement",
    ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement",
    ast.FunctionDef: "a nested function definition", ast.AsyncFunctionDef: "a nested function definition",
    ast.ClassDef: "a class definition", ast.Import: "an import", ast.ImportFrom: "an import",
    ast.IfExp: "a conditional expression", ast.List: "a list display", ast.Dict: "a dict display",
    ast.Set: "a set display", ast.Tuple: "a tuple (other than an unpacking assignment's)",
    ast.Starred: "a starred expression", ast.Slice: "a slice", ast.JoinedStr: "an f-string",
    ast.NamedExpr: "an assignment expression (:=)", ast.Expr: "an expression statement (a value computed and dropped)",
    ast.Yield: "a yield", ast.Await: "an await", ast.BoolOp: "and/or outside an if or while test",
    ast.Match: "a match statement",
}


@dataclass
class Program:
    """A function in the subset: its normalized statements (``y += e`` as ``y = y + e``) and the
    sets of names above."""

    func: object
    name: str
    file: str  # as shown in messages and comments
    offset: int  # added to an AST line number to give the file's
    lines: list  # the file's lines, for the generated comments
    params: list
    body: list  # statements, the final return excluded
    output: str  # the returned name (``_out`` for a returned expression, assigned as the last statement)
    calls: dict = field(default_factory=dict)  # id(ast.Call) -> ("ufunc", ufunc) | ("sum",) | ("len",) | ("range",)
    locals: set = field(default_factory=set)
    loop_vars: set = field(default_factory=set)
    active: set = field(default_factory=set)
    useful: set = field(default_factory=set)
    needed: set = field(default_factory=set)
    first_defs: set = field(default_factory=set)  # id(stmt) of assignments that bind a name for the first time

    def where(self, node) -> str:
        return f"{self.file}:{node.lineno + self.offset}"

    def refuse(self, what: str, node):
        raise SynthesisError(f"cannot synthesize {self.name}: {what} at {self.where(node)}")

    def source_line(self, node) -> str:
        i = node.lineno + self.offset - 1
        return self.lines[i].strip() if 0 <= i < len(self.lines) else ast.unparse(node)

    def adjoint(self, name: str) -> bool:
        return name in self.active and name in self.useful


def parse(func) -> Program:
    """Read ``func``'s source into a :class:`Program`, or raise SynthesisError naming what is
    outside the subset."""
    name = getattr(func, "__qualname__", repr(func))
    code = getattr(func, "__code__", None)
    if code is None or not inspect.isfunction(func) or func.__name__ == "<lambda>":
        raise SynthesisError(f"cannot synthesize {name}: only a plain Python function (def) has a source to transform")
    try:
        source = textwrap.dedent(inspect.getsource(func))
        path = inspect.getsourcefile(func) or code.co_filename
        lines = inspect.findsource(func)[0]
    except (OSError, TypeError) as exc:
        raise SynthesisError(f"cannot synthesize {name}: its source is not available ({exc})") from None
    tree = ast.parse(source)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != func.__name__:
        raise SynthesisError(f"cannot synthesize {name}: its source is not a def of {func.__name__}")
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    prog = Program(func, name, shown, code.co_firstlineno - 1, [line.rstrip("\n") for line in lines], [], [], "")
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults:
        prog.refuse("*args, **kwargs, keyword-only parameters or default values", fdef)
    prog.params = [p.arg for p in a.posonlyargs + a.args]
    body = list(fdef.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        prog.refuse("a function that does not end with `return value`", body[-1] if body else fdef)
    ret = body[-1]
    prog.body = [_Checker(prog).stmt(s) for s in body[:-1]]
    value = _Checker(prog).expr(ret.value)
    if isinstance(value, ast.Name):
        prog.output = value.id
    else:
        prog.output = "_out"
        out = ast.copy_location(ast.Assign([ast.Name("_out", ast.Store())], value), ret)
        prog.body.append(out)
    for node in ast.walk(fdef):
        ident = node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else None
        if ident is not None and _RESERVED.match(ident):
            prog.refuse(f"the name {ident} (the generated rule uses it for itself: rename it)", node)
    _analyse(prog)
    return prog


class _Checker:
    """The subset, statement by statement: each construct outside it is refused where it is."""

    def __init__(self, prog: Program):
        self.prog = prog
        scope = dict(vars(builtins))
        scope.update(prog.func.__globals__)
        scope.update(closure_values(prog.func))
        self.scope = scope

    def stmt(self, s):
        prog = self.prog
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                prog.refuse("a chained assignment (a = b = ...)", s)
            t = s.targets[0]
            if isinstance(t, ast.Name):
                self.expr(s.value)
                return s
            if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
                if not (isinstance(s.value, ast.Tuple) and len(s.value.elts) == len(t.elts)):
                    prog.refuse("a tuple unpacking of anything but a tuple of as many values", s)
                for e in s.value.elts:
                    self.expr(e)
                return s
            prog.refuse("an assignment to an element, attribute or slice" if not isinstance(t, ast.Tuple)
                        else "a nested or starred tuple unpacking", s)
        if isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                prog.refuse("an in-place update of an element, attribute or slice", s)
            # y += e is y = y + e: a new value, never an in-place write (a saved value stays intact)
            value = ast.copy_location(ast.BinOp(ast.Name(s.target.id, ast.Load()), s.op, s.value), s)
            self.expr(value)
            return ast.copy_location(ast.Assign([ast.Name(s.target.id, ast.Store())], value), s)
        if isinstance(s, ast.For):
            if s.orelse:
                prog.refuse("a for loop with an else", s)
            if not isinstance(s.target, ast.Name):
                prog.refuse("a for loop unpacking its items", s)
            it = s.iter
            if not (isinstance(it, ast.Call) and self.callee(it.func) is builtins.range):
                prog.refuse("a for loop over something other than range(...)", s)
            if it.keywords or not 1 <= len(it.args) <= 3:
                prog.refuse("range(...) with keywords or more than three arguments", s)
            prog.calls[id(it)] = ("range",)
            for arg in it.args:
                self.expr(arg)
            s.body = [self.stmt(b) for b in s.body]
            return s
        if isinstance(s, ast.While):
            if s.orelse:
                prog.refuse("a while loop with an else", s)
            self.test(s.test)
            s.body = [self.stmt(b) for b in s.body]
            return s
        if isinstance(s, ast.If):
            self.test(s.test)
            s.body = [self.stmt(b) for b in s.body]
            s.orelse = [self.stmt(b) for b in s.orelse]
            return s
        if isinstance(s, ast.Pass):
            return s
        if isinstance(s, ast.Return):
            prog.refuse("a return before the end of the function", s)
        prog.refuse(_WORDS.get(type(s), f"a {type(s).__name__} statement"), s)

    def test(self, node):
        """An if's or while's test: a plain value (no adjoint), and/or and not allowed."""
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.test(v)
            return node
        return self.expr(node)

    def expr(self, node):
        prog = self.prog
        if isinstance(node, ast.Name):
            return node
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float, bool):
                prog.refuse(f"the constant {node.value!r} (only numbers)", node)
            return node
        if isinstance(node, ast.Attribute):  # np.pi: a constant of a module or a global
            base = node
            while isinstance(base, ast.Attribute):
                base = base.value
            if not isinstance(base, ast.Name) or base.id in self.local_names():
                prog.refuse(f"an attribute of a value ({ast.unparse(node)})", node)
            return node
        if isinstance(node, ast.BinOp):
            self.expr(node.left)
            self.expr(node.right)
            return node
        if isinstance(node, ast.UnaryOp):
            self.expr(node.operand)
            return node
        if isinstance(node, ast.Compare):
            for v in [node.left, *node.comparators]:
                self.expr(v)
            return node
        if isinstance(node, ast.Subscript):
            if not isinstance(node.value, ast.Name):
                prog.refuse(f"indexing of an expression ({ast.unparse(node)}): index a name", node)
            if isinstance(node.slice, (ast.Slice, ast.Tuple)):
                prog.refuse(f"a slice or a multiple index ({ast.unparse(node)}): only x[i], an integer index", node)
            self.expr(node.slice)
            return node
        if isinstance(node, ast.Call):
            return self.call(node)
        prog.refuse(_WORDS.get(type(node), f"a {type(node).__name__} expression"), node)

    def call(self, node):
        prog = self.prog
        f = self.callee(node.func)
        text = ast.unparse(node.func)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            prog.refuse(f"a call of {text} with keyword or starred arguments", node)
        if isinstance(f, np.ufunc) and f in UFUNCS:
            if len(node.args) != f.nin:
                prog.refuse(f"a call of {text} with {len(node.args)} argument(s) (it takes {f.nin})", node)
            prog.calls[id(node)] = ("ufunc", f)
        elif f is np.sum:
            if len(node.args) != 1:
                prog.refuse(f"{text} with an axis or other arguments: only {text}(a)", node)
            prog.calls[id(node)] = ("sum",)
        elif f is builtins.len and len(node.args) == 1:
            prog.calls[id(node)] = ("len",)
        else:
            prog.refuse(f"a call of {text}, which is not a NumPy ufunc with a native rule, np.sum(a) or len(x)", node)
        for arg in node.args:
            self.expr(arg)
        return node

    def callee(self, node):
        """What a call's function expression names, looked up in the function's globals,
        closure and builtins (attributes only: nothing is called); None if not found."""
        if isinstance(node, ast.Name):
            return None if node.id in self.local_names() else self.scope.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.callee(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def local_names(self) -> set:
        code = self.prog.func.__code__
        return set(code.co_varnames)


def closure_values(func) -> dict:
    """A closure's captured variables (their values now: the generated rule reads them as constants)."""
    out = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # not assigned yet
            continue
    return out


# --- the three sets -------------------------------------------------------------------------


def assignments(stmts):
    """``(stmt, [(target, value or None)], depth, top)`` for every binding statement (a for
    loop's variable has no value); ``top``: directly in the function's body."""
    def walk(body, depth):
        for s in body:
            if isinstance(s, ast.Assign):
                t = s.targets[0]
                pairs = [(t.id, s.value)] if isinstance(t, ast.Name) else \
                    [(e.id, v) for e, v in zip(t.elts, s.value.elts)]
                yield s, pairs, depth, depth == 0
            elif isinstance(s, ast.For):
                yield s, [(s.target.id, None)], depth, False
                yield from walk(s.body, depth + 1)
            elif isinstance(s, ast.While):
                yield from walk(s.body, depth + 1)
            elif isinstance(s, ast.If):
                yield from walk_if(s, depth)

    def walk_if(s, depth):
        # a branch is not the function's body: its assignments may not run (depth stays, "top" does not)
        for b in (s.body, s.orelse):
            for item in walk(b, depth):
                yield item[0], item[1], item[2], False
    return list(walk(stmts, 0))


def diff_names(prog: Program, node) -> set:
    """The names a value depends on through differentiable operations (not an index, a
    comparison, len(x))."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.BinOp):
        return diff_names(prog, node.left) | diff_names(prog, node.right)
    if isinstance(node, ast.UnaryOp):
        return diff_names(prog, node.operand) if type(node.op) in UNARY else set()
    if isinstance(node, ast.Subscript):
        return {node.value.id}
    if isinstance(node, ast.Call):
        kind = prog.calls[id(node)]
        if kind[0] == "ufunc":
            vjps = UFUNCS[kind[1]].vjps
            return set().union(*(diff_names(prog, a) for k, a in enumerate(node.args) if vjps[k] is not None))
        if kind[0] == "sum":
            return diff_names(prog, node.args[0])
    return set()  # constants, attributes, comparisons, len(x)


def is_active(prog: Program, node) -> bool:
    return bool(diff_names(prog, node) & prog.active)


def _analyse(prog: Program) -> None:
    binds = assignments(prog.body)
    prog.locals = set(prog.params) | {t for _, pairs, _, _ in binds for t, _ in pairs}
    for s, pairs, _, _ in binds:
        if isinstance(s, ast.For):
            var = s.target.id
            others = [p for s2, ps, _, _ in binds if s2 is not s for p in ps if p[0] == var]
            inside = [b for b in assignments(s.body) for t, _ in b[1] if t == var]
            if var in prog.params or others or inside:
                prog.refuse(f"the loop variable {var} assigned elsewhere too", s)
            prog.loop_vars.add(var)
    prog.active = set(prog.params)
    changed = True
    while changed:  # a fixpoint: a name assigned an active value anywhere is active
        changed = False
        for _, pairs, _, _ in binds:
            for t, v in pairs:
                if v is not None and t not in prog.active and is_active(prog, v):
                    prog.active.add(t)
                    changed = True
    for _, pairs, _, _ in binds:
        for _, v in pairs:
            for node in ast.walk(v) if v is not None else ():
                if isinstance(node, ast.BinOp) and type(node.op) not in BINARY and is_active(prog, node):
                    prog.refuse(f"the operator {ast.unparse(node)} on a differentiable value (only + - * / **)", node)
    prog.useful = {prog.output}
    changed = True
    while changed:  # a fixpoint: what a useful active name's values depend on is useful
        changed = False
        for _, pairs, _, _ in binds:
            for t, v in pairs:
                if v is not None and prog.adjoint(t):
                    new = (diff_names(prog, v) & prog.active) - prog.useful
                    if new:
                        prog.useful |= new
                        changed = True
    prog.needed = set(prog.params)
    for _, pairs, _, _ in binds:
        for t, v in pairs:
            if v is not None and prog.adjoint(t) and is_active(prog, v):
                prog.needed.add(t)  # its value after the statement: the answer its VJP may read
                prog.needed |= {n.id for n in ast.walk(v) if isinstance(n, ast.Name) and n.id in prog.locals}
    seen = set(prog.params)
    for s, pairs, _, top in binds:
        names = [t for t, _ in pairs]
        if top and not (set(names) & seen):
            prog.first_defs.add(id(s))
        seen |= set(names)


def pushed(prog: Program, s, target: str) -> bool:
    """Whether the statement ``s`` saves ``target``'s old value: the pullback reads the name,
    and the statement may overwrite a value (a for loop's variable is restored from its range)."""
    return target in prog.needed and id(s) not in prog.first_defs and target not in prog.loop_vars
