"""The subset the synthesizer transforms, statement by statement (``parse``): each construct
outside it is refused, naming it and its ``file:line``; the rewritten forms analysis.py's
docstring lists are made here; the callables a function names are found by identity in its
globals, closure and builtins (looked up, never called)."""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import re
import textwrap
import types

import numpy as np

from ..engine import lists
from ..engine.registry import UFUNCS
from ..errors import SynthesisError
from .analysis import PLAIN_ATTRS, PLAIN_BUILTINS, RUNTIME, Program, analyse, closure_values
from .comprehensions import hoist
from .kinds import of_value
from .shapes import uniform

# Names the generated module uses for itself; a function using one is refused (it would be shadowed).
RESERVED = re.compile(r"^(_np|_math|_special|_UFUNCS|_push|_pull|_raw|" + "|".join(f"_{name}" for name in RUNTIME) +
                      r"|fwd|pullback|_vjp_\w+|_stack_\w+|"
                      r"_(count|counts|range|ranges|branch|branches|step|calls|kept|t|g|c|i|u|v)\d+|_out|_d_out|d_\w+)$")

#: What a random generator draws with (np.random.Generator's and RandomState's methods): a method of
#: that name is taken for a draw whatever its receiver (an array has none of them).
RANDOM_METHODS = {name for cls in (np.random.Generator, np.random.RandomState) for name in dir(cls)
                  if not name.startswith("_")} - {"bit_generator", "spawn", "get_state", "set_state", "seed"}

_WORDS = {
    ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.With: "a with statement", ast.AsyncWith: "a with statement",
    ast.Lambda: "a lambda", ast.Try: "a try statement", ast.Break: "a break", ast.Continue: "a continue",
    ast.Raise: "a raise statement", ast.Assert: "an assert statement", ast.Delete: "a del statement",
    ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement",
    ast.FunctionDef: "a nested function definition", ast.AsyncFunctionDef: "a nested function definition",
    ast.ClassDef: "a class definition", ast.Import: "an import", ast.ImportFrom: "an import",
    ast.IfExp: "a conditional expression", ast.Dict: "a dict display",
    ast.Set: "a set display", ast.Starred: "a starred expression", ast.JoinedStr: "an f-string",
    ast.NamedExpr: "an assignment expression (:=)", ast.Expr: "an expression statement (a value computed and dropped)",
    ast.Yield: "a yield", ast.Await: "an await", ast.BoolOp: "and/or outside an if or while test",
    ast.Match: "a match statement",
}




def parse(func, args: tuple | None = None, kwargs: dict | None = None, wrt=None) -> Program:
    """Read ``func``'s source into a :class:`Program`, or raise SynthesisError naming what is
    outside the subset. ``args``: arguments of the signature the rule is for (their kinds:
    kinds.py); without them nothing is assumed of the parameters. ``wrt``: the parameters
    differentiated (positions or names; all, if None): the others' adjoints are not computed."""
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
    if a.vararg or a.kwarg or a.kwonlyargs or a.kw_defaults:
        prog.refuse("*args, **kwargs or keyword-only parameters", fdef)
    if fdef.decorator_list:
        prog.refuse("a decorated function (its decorators would not run)", fdef)
    prog.params = [p.arg for p in a.posonlyargs + a.args]
    # the user's own names, before the rewritten statements bring the generated ones (_u1, _i1)
    for node in ast.walk(fdef):
        ident = node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else None
        if ident is not None and RESERVED.match(ident):
            prog.refuse(f"the name {ident} (the generated rule uses it for itself: rename it)", node)

    checker = _Checker(prog)
    for d in a.defaults:
        checker.expr(d)
    prog.defaults = [ast.unparse(d) for d in a.defaults]
    body = list(fdef.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        prog.refuse("a function that does not end with `return value`", body[-1] if body else fdef)
    ret = body[-1]
    pre = hoist(ret, prog.fresh, checker.local_names)  # return [...]: its list built first
    prog.body = checker.block(body[:-1] + pre)
    value = checker.expr(ret.value)
    if isinstance(value, ast.Name) and value.id not in prog.params:
        prog.output = value.id
    else:  # an expression, or a parameter returned as it is (its adjoint is the argument's)
        prog.output = "_out"
        out = ast.copy_location(ast.Assign([ast.Name("_out", ast.Store())], value), ret)
        prog.body.append(out)
    if args is not None:
        prog.param_kinds = {p: of_value(a) for p, a in zip(prog.params, args)}
        prog.param_kinds.update({p: of_value(a) for p, a in (kwargs or {}).items() if p in prog.params})
        prog.uniform = uniform([*args, *(kwargs or {}).values()])
    prog.scope = checker.scope
    if wrt is not None:
        chosen = {prog.params[k] if isinstance(k, int) else k for k in wrt if not isinstance(k, int) or k < len(prog.params)}
        prog.inactive = set(prog.params) - chosen
    analyse(prog)
    return prog


def _copy_loc(new, old):
    return ast.fix_missing_locations(ast.copy_location(new, old))


def _name(ident: str, store: bool = False):
    return ast.Name(ident, ast.Store() if store else ast.Load())


class _Checker:
    """The subset, statement by statement: each construct outside it is refused where it is;
    the rewritten statements (the module docstring) are made here."""

    def __init__(self, prog: Program):
        self.prog = prog
        scope = dict(vars(builtins))
        scope.update(prog.func.__globals__)
        scope.update(closure_values(prog.func))
        self.scope = scope
        self.local_names = set(prog.func.__code__.co_varnames) | set(prog.func.__code__.co_cellvars)

    def block(self, stmts) -> list:
        return [out for s in stmts for out in self.stmt(s)]

    def stmt(self, s) -> list:
        prog = self.prog
        pre = hoist(s, prog.fresh, self.local_names)
        if pre:  # its comprehensions written out as loops first (comprehensions.py)
            return self.block(pre[:-1]) if pre[-1] is None else self.block(pre) + self.stmt(s)
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                prog.refuse("a chained assignment (a = b = ...)", s)
            t = s.targets[0]
            if isinstance(t, ast.Name):
                self.expr(s.value)
                return [s]
            if isinstance(t, ast.Subscript):
                if not isinstance(t.value, ast.Name) or t.value.id not in self.local_names:
                    prog.refuse(f"a write into {ast.unparse(t.value)}: only into an array the function made "
                                f"(a local name)", s)
                self.index(t)
                self.expr(s.value)
                return [s]
            if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
                if isinstance(s.value, ast.Tuple):
                    if len(s.value.elts) != len(t.elts):
                        prog.refuse("a tuple unpacking of a different number of values", s)
                    for e in s.value.elts:
                        self.expr(e)
                    return [s]
                # a, b = e: the value once, then its items
                self.expr(s.value)
                tmp = prog.fresh("_u")
                out = [_copy_loc(ast.Assign([_name(tmp, True)], s.value), s)]
                for k, e in enumerate(t.elts):
                    item = ast.Subscript(_name(tmp), ast.Constant(k), ast.Load())
                    out.append(_copy_loc(ast.Assign([_name(e.id, True)], item), s))
                return out
            prog.refuse("an assignment to an attribute" if isinstance(t, ast.Attribute)
                        else "a nested or starred tuple unpacking", s)
        if isinstance(s, ast.AugAssign):
            if isinstance(s.target, ast.Name):
                target, read = _name(s.target.id, True), _name(s.target.id)
            elif isinstance(s.target, ast.Subscript):
                target, read = s.target, ast.Subscript(s.target.value, s.target.slice, ast.Load())
            else:
                prog.refuse("an in-place update of an attribute", s)
            # reversed as y = y + e; the forward runs it as written (in place for an array: analysis.py
            # checks that nothing else refers to that array)
            value = _copy_loc(ast.BinOp(read, s.op, s.value), s)
            out = self.stmt(_copy_loc(ast.Assign([target], value), s))
            if isinstance(s.target, ast.Name):
                out[0].aug = s
            return out
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute) \
                and s.value.func.attr == "append" and isinstance(s.value.func.value, ast.Name) \
                and s.value.func.value.id in self.local_names:
            call = s.value
            if len(call.args) != 1 or call.keywords:
                prog.refuse(f"{ast.unparse(call.func)} with other than one argument", s)
            self.expr(call.args[0])
            return [s]
        if isinstance(s, ast.For):
            if s.orelse:
                prog.refuse("a for loop with an else", s)
            it = s.iter
            if isinstance(it, ast.Call) and self.callee(it.func) is builtins.range and isinstance(s.target, ast.Name):
                if it.keywords or not 1 <= len(it.args) <= 3:
                    prog.refuse("range(...) with keywords or more than three arguments", s)
                prog.calls[id(it)] = ("plain", builtins.range)
                for arg in it.args:
                    self.expr(arg)
                s.body = self.block(s.body)
                return [s]
            return self.index_loop(s)
        if isinstance(s, ast.While):
            if s.orelse:
                prog.refuse("a while loop with an else", s)
            self.test(s.test)
            s.body = self.block(s.body)
            return [s]
        if isinstance(s, ast.If):
            self.test(s.test)
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            return [s]
        if isinstance(s, ast.Pass):
            return [s]
        if isinstance(s, ast.Return):
            prog.refuse("a return before the end of the function", s)
        prog.refuse(_WORDS.get(type(s), f"a {type(s).__name__} statement"), s)

    def index_loop(self, s) -> list:
        """``for v in xs``, ``for a, b in pairs``, ``for i, v in enumerate(xs)``, ``for a, b in
        zip(xs, ys)``: an index loop over ``range(len(...))`` whose body starts by binding the
        targets to the items (``v = xs[_i1]``); an iterable that is not a name is evaluated once,
        before the loop, into a name of the rule's own (as Python evaluates it once)."""
        prog, it, before = self.prog, s.iter, []

        def named(node):
            if isinstance(node, ast.Name):
                return node.id
            self.expr(node)
            tmp = prog.fresh("_u")
            before.append(_copy_loc(ast.Assign([_name(tmp, True)], node), s))
            return tmp
        f = self.callee(it.func) if isinstance(it, ast.Call) and not it.keywords else None
        k = prog.fresh("_i")
        if f is builtins.enumerate and len(it.args) == 1:
            if not (isinstance(s.target, ast.Tuple) and len(s.target.elts) == 2):
                prog.refuse("enumerate(...) not unpacked into an index and an item", s)
            xs = named(it.args[0])
            sequences, targets = [xs], [s.target.elts[1]]
            counter = [_copy_loc(ast.Assign([s.target.elts[0]], _name(k)), s)]
        elif f is builtins.zip and any(isinstance(a, ast.Starred) for a in it.args):
            prog.refuse(f"zip with a starred argument ({ast.unparse(it)})", s)
        elif f is builtins.zip and it.args:
            if not (isinstance(s.target, ast.Tuple) and len(s.target.elts) == len(it.args)):
                prog.refuse("zip(...) not unpacked into one name per sequence", s)
            sequences, targets, counter = [named(a) for a in it.args], list(s.target.elts), []
        elif isinstance(it, ast.Call) and (f is builtins.range or f in (builtins.enumerate, builtins.zip)):
            prog.refuse(f"a for loop over {ast.unparse(it)} unpacked as written", s)
        else:
            sequences, targets, counter = [named(it)], [s.target], []
        lengths = []
        for xs in sequences:
            n = ast.Call(_name("len"), [_name(xs)], [])
            prog.calls[id(n)] = ("plain", builtins.len)
            lengths.append(n)
        if len(lengths) > 1:
            shortest = ast.Call(_name("min"), lengths, [])
            prog.calls[id(shortest)] = ("plain", builtins.min)
            lengths = [shortest]
        rng = ast.Call(_name("range"), lengths, [])
        prog.calls[id(rng)] = ("plain", builtins.range)
        items = counter + [a for xs, t in zip(sequences, targets)
                           for a in self.bind_item(t, ast.Subscript(_name(xs), _name(k), ast.Load()), s)]
        loop = _copy_loc(ast.For(_name(k, True), rng, [], [], None), s)
        loop.body = items + self.block(s.body)
        return before + [loop]

    def bind_item(self, target, value, s) -> list:
        """The assignments binding a for loop's target (a name, or a tuple of them) to an item."""
        if isinstance(target, ast.Name):
            return [_copy_loc(ast.Assign([_name(target.id, True)], value), s)]
        if not (isinstance(target, ast.Tuple) and all(isinstance(e, (ast.Name, ast.Tuple)) for e in target.elts)):
            self.prog.refuse(f"a for loop's target {ast.unparse(target)}", s)
        tmp = self.prog.fresh("_u")
        out = [_copy_loc(ast.Assign([_name(tmp, True)], value), s)]
        for j, e in enumerate(target.elts):
            out += self.bind_item(e, ast.Subscript(_name(tmp), ast.Constant(j), ast.Load()), s)
        return out

    def test(self, node):
        """An if's or while's test: a plain value (no adjoint), and/or and not allowed."""
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.test(v)
            return node
        return self.expr(node)

    def index(self, node: ast.Subscript) -> None:
        """A subscript's index: numbers, names, slices, None, ..., tuples of them, arrays."""
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for p in parts:
            if isinstance(p, ast.Slice):
                for b in (p.lower, p.upper, p.step):
                    if b is not None:
                        self.expr(b)
            else:
                self.expr(p)

    def expr(self, node):
        prog = self.prog
        if isinstance(node, ast.Name):
            return node
        if isinstance(node, ast.Constant):
            if node.value is not None and node.value is not Ellipsis and \
                    type(node.value) not in (int, float, bool, complex, str):
                prog.refuse(f"the constant {node.value!r}", node)
            return node
        if isinstance(node, ast.Attribute):
            base = node
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id not in self.local_names:
                return node  # np.pi, a module's or a global's constant
            if node.attr not in PLAIN_ATTRS and node.attr != "T":
                prog.refuse(f"the attribute {ast.unparse(node)} of a value (only .T, .shape, .ndim, .size, "
                            f".dtype)", node)
            self.expr(node.value)
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
        if isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                self.expr(e)
            return node
        if isinstance(node, ast.Subscript):
            self.expr(node.value)
            self.index(node)
            return node
        if isinstance(node, ast.Call):
            return self.call(node)
        prog.refuse(_WORDS.get(type(node), f"a {type(node).__name__} expression"), node)

    def call(self, node):
        prog = self.prog
        text = ast.unparse(node.func)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            prog.refuse(f"a call of {text} with starred arguments", node)
        if isinstance(node.func, ast.Attribute) and not self.is_global(node.func.value):
            # a method of a value: x.sum(axis=0), x.reshape(n, m), x.dot(y)
            if node.func.attr == "append":
                prog.refuse(f"{text}(...) inside an expression (only as a statement on a list the function made)",
                            node)
            if node.func.attr in RANDOM_METHODS:
                prog.refuse(f"a random draw ({text}): the pullback would draw other numbers; draw outside the "
                            f"function and pass the draw in", node)
            prog.calls[id(node)] = ("method", node.func.attr)
            self.expr(node.func.value)
        else:
            f = lists.numpy_function(self.callee(node.func))  # np.stack as NumPy's, inside a gradient too
            if f is None:
                prog.refuse(f"a call of {text}, which names nothing the function's globals, closure or "
                            f"builtins define", node)
            module = getattr(f, "__module__", None) or ""
            if isinstance(f, np.ufunc) and f in UFUNCS and not node.keywords and len(node.args) == f.nin:
                prog.calls[id(node)] = ("ufunc", f)
            elif f is np.sum and len(node.args) == 1 and not node.keywords:
                prog.calls[id(node)] = ("sum",)
            elif f in (builtins.sum, builtins.abs) and not node.keywords:
                prog.calls[id(node)] = ("call", f)  # differentiable: the engine's gradient of the call
            elif f in PLAIN_BUILTINS:
                prog.calls[id(node)] = ("plain", f)
            elif module.startswith("numpy.ma") or isinstance(f, type) and issubclass(f, np.ma.MaskedArray):
                prog.refuse(f"a masked array ({text}): its masked entries would be differentiated", node)
            elif module.startswith("numpy.random") or isinstance(getattr(f, "__self__", None),
                                                                 (np.random.Generator, np.random.RandomState)):
                prog.refuse(f"a random draw ({text}): draw it outside the function and pass it in", node)
            elif inspect.isgeneratorfunction(f):
                prog.refuse(f"a call of the generator function {text} (its items are made one at a time)", node)
            elif inspect.isfunction(f) and module.split(".")[0] not in ("numpy", "scipy"):
                prog.calls[id(node)] = ("user", f)
            elif callable(f) and module.split(".")[0] in ("numpy", "scipy") or isinstance(f, np.ufunc):
                prog.calls[id(node)] = ("call", f)
            elif isinstance(f, (types.BuiltinFunctionType, type)):
                prog.refuse(f"a call of {text}: only NumPy's and SciPy's functions, your own functions, and "
                            f"len, range, sum, abs, int, float, min, max, round, bool", node)
            else:
                prog.refuse(f"a call of {text}, which is not a function of NumPy, SciPy or yours", node)
        for arg in node.args:
            self.expr(arg)
        for kw in node.keywords:
            self.expr(kw.value)
        return node

    def is_global(self, node) -> bool:
        """Whether an attribute's base is a module or a global (np.linalg), not a value."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in self.local_names

    def callee(self, node):
        """What a call's function expression names, looked up in the function's globals,
        closure and builtins (attributes only: nothing is called); None if not found."""
        if isinstance(node, ast.Name):
            return None if node.id in self.local_names and node.id not in closure_values(self.prog.func) \
                else self.scope.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.callee(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None


