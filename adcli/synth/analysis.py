"""What a function's source says, for the synthesizer: its statements in the subset (anything
else refused, naming the construct and ``file:line``), the callables it names (by identity), and
which names carry a gradient.

Three sets of names decide what the generated rule computes and keeps:

* *active*: a name that may hold a value depending on a parameter through differentiable
  operations (every parameter is; a loop counter, ``len(x)``, ``x.shape`` or a comparison is not);
* *useful*: a name whose value reaches the returned one through differentiable operations;
  adjoints exist only for names both active and useful (no dead adjoints);
* *needed*: a name the pullback reads (the operands of the statements it reverses, and the
  parameters): its values are restored statement by statement, so one a later statement
  overwrites is saved on a stack first; one never overwritten is not saved.

A few statements are rewritten into the subset's core before anything else (the generated
forward pass shows the rewritten form under the user's line): ``y += e`` is ``y = y + e`` (a new
value: a saved one stays intact), ``y[i] += e`` is ``y[i] = y[i] + e``, ``a, b = e`` (e not a
tuple display) is ``_u1 = e; a = _u1[0]; b = _u1[1]``, and ``for v in xs`` is ``for _i1 in
range(len(xs)): v = xs[_i1]``.

*Mutables* are the arrays written by subscript (``y[i] = e``) and the lists appended to: each
must be made fresh in the function (``np.zeros``, ``np.empty_like``, ``x.copy()``, a list
display) and never aliased (bound to another name, passed to a function that may return a
view or keep it), so that the pullback can work on its own copy and undo the writes one by one.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

import numpy as np

from ..engine.core import passes
from ..engine.keep import params_read
from ..engine.registry import UFUNCS
from ..errors import SynthesisError
from . import adjoints, shapes
from .kinds import INT, SCALAR, infer, kind_of

#: Python's arithmetic operators, as the ufuncs whose native VJPs differentiate them.
BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide, ast.Pow: np.power,
          ast.MatMult: np.matmul}
UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}

#: What generated code imports from runtime.py and calls.py (as ``_name``).
RUNTIME = ("call_vjp", "copy", "pull", "push", "cotangent", "dot_vjp", "fit", "item", "method_vjp", "own", "plain",
           "saved", "scatter", "spread", "spread_moment", "roll", "roll_back", "reshape_back", "transpose_back", "take",
           "take_last", "to_extrema", "unbroadcast", "unconcatenate", "unstack", "zero_passing")

#: Those of RUNTIME that live in calls.py (the gradient of a call: the engine's, or a callee's rule).
CALLS = {name: "calls" for name in ("call_vjp", "dot_vjp", "method_vjp", "pull", "push")}

#: Calls that make a new array (or list) nothing else refers to: what a mutable is bound to.
FRESH = {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.array,
         np.copy, np.arange, np.linspace, np.eye, np.identity}
#: Builtins a synthesized rule may call on values without a gradient (int(n), abs(k), ...).
PLAIN_BUILTINS = {builtins.len, builtins.range, builtins.int, builtins.float, builtins.min, builtins.max,
                  builtins.round, builtins.bool}
#: Attributes of a value: ``.T`` carries a gradient, the others are plain numbers.
PLAIN_ATTRS = {"shape", "ndim", "size", "dtype"}


@dataclass
class Program:
    """A function in the subset: its normalized statements and the sets of names above."""

    func: object
    name: str
    file: str  # as shown in messages and comments
    offset: int  # added to an AST line number to give the file's
    lines: list  # the file's lines, for the generated comments
    params: list
    body: list  # statements, the final return excluded
    output: str  # the returned name (``_out`` for a returned expression, assigned as the last statement)
    defaults: list = field(default_factory=list)  # the parameters' default expressions (source text), last ones
    # id(ast.Call) -> ("ufunc", ufunc) | ("sum",) | ("plain", f) | ("call", f) | ("user", f) | ("method", name)
    calls: dict = field(default_factory=dict)
    locals: set = field(default_factory=set)
    loop_vars: set = field(default_factory=set)
    mutables: set = field(default_factory=set)  # arrays written by subscript, lists appended to
    lists: set = field(default_factory=set)  # the mutables appended to
    inplace: set = field(default_factory=set)  # names updated in place (y += e) that may hold an array
    active: set = field(default_factory=set)
    useful: set = field(default_factory=set)
    needed: set = field(default_factory=set)
    first_defs: set = field(default_factory=set)  # id(stmt) of assignments that bind a name for the first time
    inactive: set = field(default_factory=set)  # parameters not differentiated (synthesize's wrt)
    counter: int = 0  # the rewritten statements' temporaries (_u1, _i1, ...)
    param_kinds: dict = field(default_factory=dict)  # from the signature synthesized for (kinds.of_value)
    scope: dict = field(default_factory=dict)  # the function's builtins, globals and closure variables
    kinds: dict = field(default_factory=dict)  # name -> its kind (kinds.py), where concluded
    shapes: dict = field(default_factory=dict)  # name -> its shape symbol (shapes.py), where concluded
    uniform: bool = False  # every float array argument float64 (shapes.uniform): shapes stand for dtypes

    def where(self, node) -> str:
        return f"{self.file}:{node.lineno + self.offset}"

    def refuse(self, what: str, node):
        raise SynthesisError(f"cannot synthesize {self.name}: {what} at {self.where(node)}")

    def source_line(self, node) -> str:
        i = node.lineno + self.offset - 1
        return self.lines[i].strip() if 0 <= i < len(self.lines) else ast.unparse(node)

    def adjoint(self, name: str) -> bool:
        return name in self.active and name in self.useful

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"



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


def is_write(s) -> bool:
    return isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript)


def is_append(s) -> bool:
    return isinstance(s, ast.Expr)


def pairs_of(s) -> list:
    """``[(target, value)]`` of a binding statement: a write's or an append's target is the
    array or list it changes, its value what goes in."""
    if isinstance(s, ast.Expr):
        return [(s.value.func.value.id, s.value.args[0])]
    t = s.targets[0]
    if isinstance(t, ast.Name):
        return [(t.id, s.value)]
    if isinstance(t, ast.Subscript):
        return [(t.value.id, s.value)]
    return [(e.id, v) for e, v in zip(t.elts, s.value.elts)]


def assignments(stmts):
    """``(stmt, [(target, value or None)], depth, top)`` for every binding statement (a for
    loop's variable has no value); ``top``: directly in the function's body."""
    def walk(body, depth):
        for s in body:
            if isinstance(s, (ast.Assign, ast.Expr)):
                yield s, pairs_of(s), depth, depth == 0
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
    comparison, len(x), x.shape)."""
    if isinstance(node, ast.Name):
        return {node.id} if node.id in prog.locals else set()
    if isinstance(node, ast.BinOp):
        return diff_names(prog, node.left) | diff_names(prog, node.right)
    if isinstance(node, ast.UnaryOp):
        return diff_names(prog, node.operand) if type(node.op) in UNARY else set()
    if isinstance(node, ast.Subscript):
        return diff_names(prog, node.value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return set().union(*(diff_names(prog, e) for e in node.elts))
    if isinstance(node, ast.Attribute):
        return diff_names(prog, node.value) if node.attr == "T" else set()
    if isinstance(node, ast.Call):
        kind = prog.calls[id(node)]
        if kind[0] == "ufunc":
            vjps = UFUNCS[kind[1]].vjps
            return set().union(*(diff_names(prog, a) for k, a in enumerate(node.args) if vjps[k] is not None))
        if kind[0] == "sum":
            return diff_names(prog, node.args[0])
        operands = [*node.args, *(k.value for k in node.keywords)]
        if kind[0] in ("call", "user"):
            return set().union(*(diff_names(prog, a) for a in operands))
        if kind[0] == "method":
            return set().union(diff_names(prog, node.func.value), *(diff_names(prog, a) for a in operands))
    return set()  # constants, globals, comparisons, len(x), int(n)


def is_active(prog: Program, node) -> bool:
    return bool(diff_names(prog, node) & prog.active)


def scalar_op(prog: Program, node) -> bool:
    """Whether ``node`` (arithmetic, a ufunc) and its operands are all scalars by their kinds:
    its adjoints are plain arithmetic, with no broadcasting to undo."""
    if isinstance(node, ast.BinOp):
        operands = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        operands = [node.operand]
    elif isinstance(node, ast.Call) and prog.calls[id(node)][0] == "ufunc":
        operands = node.args
    else:
        return False
    return kind_of(prog, node, prog.kinds) == SCALAR and all(kind_of(prog, a, prog.kinds) in (SCALAR, INT)
                                                              for a in operands)


def reads_answer(prog: Program, v) -> bool:
    """Whether the adjoint at the root of ``v`` reads its answer (exp's does, add's does not)."""
    if not isinstance(v, (ast.BinOp, ast.UnaryOp, ast.Call)):
        return False
    if isinstance(v, ast.Call) and prog.calls[id(v)][0] != "ufunc":
        return adjoints.reads_answer(prog.calls[id(v)])
    if scalar_op(prog, v) and isinstance(getattr(v, "op", None), (*LINEAR, ast.Mult, ast.Div)):
        return False  # written out from the operands
    ufunc = BINARY.get(type(v.op)) if isinstance(v, ast.BinOp) else UNARY.get(type(v.op)) \
        if isinstance(v, ast.UnaryOp) else prog.calls[id(v)][1]
    return any(vjp is not None and vjp is not passes and 1 in (params_read(vjp) or {1})
               for vjp in UFUNCS[ufunc].vjps)


#: Operators whose adjoints on scalars read no operand's value.
LINEAR = (ast.Add, ast.Sub, ast.USub, ast.UAdd)


def read_names(prog: Program, node) -> set:
    """The locals whose values reversing ``node`` reads: every name in it, save the operands
    of a scalar sum or difference (their adjoints are g and -g: no value, no shape)."""
    if is_active(prog, node) and scalar_op(prog, node) and \
            isinstance(getattr(node, "op", None), LINEAR):
        operands = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.operand]
        return set().union(*(read_names(prog, a) for a in operands))
    if isinstance(node, ast.Name) and is_active(prog, node):
        return set()  # its adjoint is added to; its value is its parent's to read
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in prog.locals}


def analyse(prog: Program) -> None:
    binds = assignments(prog.body)
    prog.locals = set(prog.params) | {t for _, pairs, _, _ in binds for t, _ in pairs}
    for s, pairs, _, _ in binds:
        if isinstance(s, ast.For):
            var = s.target.id
            others = [p for s2, ps, _, _ in binds if s2 is not s for p in ps if p[0] == var]
            if var in prog.params or others:
                prog.refuse(f"the loop variable {var} assigned elsewhere too", s)
            prog.loop_vars.add(var)
    prog.kinds = infer(prog, prog.param_kinds, prog.scope, binds)
    prog.shapes = shapes.infer(prog, binds, prog.uniform)
    # a parameter the signature says holds no float (an int, an index array) has no gradient
    prog.active = {p for p in prog.params if p not in prog.inactive and not (
        prog.kinds.get(p) == INT or isinstance(prog.kinds.get(p), tuple) and prog.kinds[p][2] not in "fc")}
    changed = True
    while changed:  # a fixpoint: a name assigned an active value anywhere is active
        changed = False
        for _, pairs, _, _ in binds:
            for t, v in pairs:
                if v is not None and t not in prog.active and is_active(prog, v):
                    prog.active.add(t)
                    changed = True
    _check_inplace(prog, binds)
    _check_mutables(prog, binds)
    for s, pairs, _, _ in binds:
        for _, v in pairs:
            for node in ast.walk(v) if v is not None else ():
                if isinstance(node, ast.BinOp) and type(node.op) not in BINARY and is_active(prog, node):
                    prog.refuse(f"the operator {ast.unparse(node)} on a differentiable value (only + - * / ** @)",
                                node)
                if isinstance(node, ast.Call):
                    kind = prog.calls[id(node)]
                    if kind[0] == "plain" and kind[1] is not builtins.len and \
                            any(is_active(prog, a) for a in [*node.args, *(k.value for k in node.keywords)]):
                        prog.refuse(f"{ast.unparse(node.func)}(...) of a differentiable value (its gradient is "
                                    f"lost: use NumPy's function)", node)
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript) and is_active(prog, s.targets[0].slice):
            prog.refuse("an index computed from a differentiable value", s)
        for _, v in pairs:
            for node in ast.walk(v) if v is not None else ():
                if isinstance(node, ast.Subscript) and is_active(prog, node.slice) and not is_active(prog, node.value):
                    prog.refuse(f"a differentiable value used as an index ({ast.unparse(node)}): for np.r_ and np.c_, "
                                f"use np.concatenate", node)
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
    for s, pairs, _, _ in binds:
        for t, v in pairs:
            if v is not None and prog.adjoint(t) and is_active(prog, v):
                if not is_write(s) and not is_append(s) and reads_answer(prog, v):
                    prog.needed.add(t)  # its value after the statement: the answer its VJP reads
                prog.needed |= read_names(prog, v)
                if is_write(s):  # the index, and the value (its shape: the written elements' adjoint is fitted to it)
                    prog.needed |= {n.id for node in (s.targets[0].slice, v) for n in ast.walk(node)
                                    if isinstance(n, ast.Name) and n.id in prog.locals}
    prog.needed |= {m for m in prog.mutables if prog.adjoint(m)}  # restored write by write, append by append
    seen = set(prog.params)
    for s, pairs, _, top in binds:
        names = [t for t, _ in pairs]
        if top and not (set(names) & seen) and not is_write(s) and not is_append(s):
            prog.first_defs.add(id(s))
        seen |= set(names)


#: Methods of an array that make a new one (a mutable may call them; reshape, ravel, .T may return views).
NEW_ARRAY_METHODS = {"copy", "sum", "mean", "max", "min", "prod", "dot", "std", "var", "any", "all", "cumsum"}


def _check_mutables(prog: Program, binds) -> None:
    """Arrays written by subscript and lists appended to: made fresh, never aliased."""
    for s, pairs, _, _ in binds:
        if is_write(s) or is_append(s):
            prog.mutables.add(pairs[0][0])
    if not prog.mutables and not prog.inplace:
        return
    lists = prog.lists = {pairs[0][0] for s, pairs, _, _ in binds if is_append(s)}
    for s, pairs, _, _ in binds:
        for t, v in pairs:
            if t not in prog.mutables:
                continue
            if t in prog.params:
                prog.refuse(f"a write into the argument {t} (the rule would change its caller's value): write "
                            f"into a copy", s)
            if v is None or is_write(s) or is_append(s):
                continue
            kind = prog.calls.get(id(v)) if isinstance(v, ast.Call) else None
            fresh = isinstance(v, ast.List) if t in lists else not (kind is not None and _no_copy(v)) and (
                kind == ("method", "copy") or (kind is not None and kind[0] == "call" and kind[1] in FRESH))
            if not fresh:
                what = "a list appended to must be made by a list display ([...])" if t in lists else \
                    "an array written into must be made fresh (np.zeros, np.empty_like, np.array, x.copy())"
                prog.refuse(f"{t} = {ast.unparse(v)}: {what}", s)
    for s, pairs, _, _ in binds:
        for t, v in pairs:
            if v is None:
                continue
            if not is_write(s) and _may_alias(prog, v):
                prog.refuse(f"{ast.unparse(v)} may share an array written into (a view of it), and {t} would "
                            f"change with it: copy it", s)
            for node in ast.walk(v):
                inner = node.elts if isinstance(node, (ast.List, ast.Tuple)) else node.args \
                    if isinstance(node, ast.Call) and prog.calls[id(node)][0] == "user" else ()
                for e in inner:
                    if _may_alias(prog, e):
                        prog.refuse(f"{ast.unparse(e)} may share an array written into, and is kept or passed on "
                                    f"({ast.unparse(node)}): copy it", s)


#: NumPy functions that may return a view of (or the very) array they are given.
VIEWS = {np.reshape, np.ravel, np.transpose, np.squeeze, np.expand_dims, np.asarray, np.asanyarray,
         np.ascontiguousarray, np.asfortranarray, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.broadcast_to,
         np.diagonal, np.moveaxis, np.swapaxes, np.real, np.imag, np.flip, np.fliplr, np.flipud, np.rot90, np.split,
         np.array_split, np.hsplit, np.vsplit, np.dsplit, np.require, np.matrix_transpose}


def _check_inplace(prog: Program, binds) -> None:
    """``y += e`` runs in place when y holds an array: y must not be an argument (the caller's
    array would change), and every binding of y must make a new value, so that no other name can
    refer to the array the update changes (the aliasing checks of the mutables then apply to it)."""
    for s, pairs, _, _ in binds:
        if getattr(s, "aug", None) is None:
            continue
        y = pairs[0][0]
        if kind_of(prog, ast.Name(y, ast.Load()), prog.kinds) in (SCALAR, INT):
            continue  # a number: updated by rebinding, as the rule does
        if y in prog.params:
            prog.refuse(f"an in-place update of the argument {y} (it would change its caller's array): "
                        f"write {y} = {ast.unparse(s.value)}", s)
        prog.inplace.add(y)
    for s, pairs, _, _ in binds:
        for t, v in pairs:
            if t in prog.inplace and v is not None and getattr(s, "aug", None) is None and not is_write(s) \
                    and not is_append(s) and not new_value(prog, v) and kind_of(prog, v, prog.kinds) not in (SCALAR, INT):
                prog.refuse(f"{t} = {ast.unparse(v)} and then {t} updated in place: the update would change the "
                            f"array {ast.unparse(v)} refers to as well: write {t} = {t} + ... (or copy it)", s)


def new_value(prog: Program, v) -> bool:
    """Whether ``v`` makes a value nothing else refers to: a number, arithmetic, a ufunc, a sum,
    a copy, a NumPy function that returns a new array."""
    if isinstance(v, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.List, ast.Tuple)):
        return True
    if isinstance(v, ast.Call):
        kind = prog.calls[id(v)]
        return not _no_copy(v) and (kind[0] in ("ufunc", "sum", "plain") or kind == ("method", "copy") or
                                    kind[0] == "method" and kind[1] in NEW_ARRAY_METHODS or
                                    kind[0] == "call" and kind[1] not in VIEWS)
    return False


def _no_copy(call) -> bool:
    """A call told it may return its argument itself (``copy=False``, ``copy=None``)."""
    return any(k.arg == "copy" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
               for k in call.keywords)


def _may_alias(prog: Program, v) -> bool:
    """Whether the value of ``v`` may be (a view of) a mutable: the mutable itself, an index of
    one, ``.T``, a method or a NumPy function that may return a view of its argument."""
    if isinstance(v, ast.Name):
        return v.id in prog.mutables or v.id in prog.inplace
    if isinstance(v, ast.Subscript):  # a list's item is never written into (its list is appended to)
        return not (isinstance(v.value, ast.Name) and v.value.id in prog.lists) and _may_alias(prog, v.value)
    if isinstance(v, ast.Attribute):
        return v.attr == "T" and _may_alias(prog, v.value)
    if isinstance(v, ast.Call):
        kind = prog.calls[id(v)]
        if kind[0] == "method":
            return (kind[1] not in NEW_ARRAY_METHODS or _no_copy(v)) and _may_alias(prog, v.func.value)
        if kind[0] == "call" and kind[1] in FRESH and _no_copy(v):
            return any(_may_alias(prog, a) for a in v.args)
        if kind[0] in ("call", "user"):
            # NumPy makes a new array of a list (np.stack(xs)); it may return a view of an array
            return (kind[0] == "user" or kind[1] not in FRESH) and \
                any(_may_alias(prog, a) and not (isinstance(a, ast.Name) and a.id in prog.lists) for a in v.args)
    return False  # arithmetic, ufuncs, sums, constants: new values


def pushed(prog: Program, s, target: str) -> bool:
    """Whether the statement ``s`` saves ``target``'s old value (or, for a write, the old values
    of the elements it writes): the pullback reads the name, and the statement may overwrite a
    value (a for loop's variable is restored from its range; an append is undone by a pop)."""
    if is_append(s):
        return False
    return target in prog.needed and id(s) not in prog.first_defs and target not in prog.loop_vars
