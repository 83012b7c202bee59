"""List comprehensions and generator expressions, written out as the loops they are, so that
the rest of the subset differentiates them: ``ys = [f(x) for x in xs if x.sum() > 0]`` becomes

    ys = []
    for _x_2 in xs:
        if _x_2.sum() > 0:
            ys.append(f(_x_2))

and a comprehension inside an expression, ``np.stack([f(x) for x in xs])``, a list ``_lc1``
built the same way, the expression reading ``np.stack(_lc1)`` (the loop variables renamed: a
comprehension's do not leak into the function, nor meet the generated code's names). A generator
expression is made a list the same way (``sum(x * x for x in xs)``): its value is the same,
only built before its consumer runs.

Where a comprehension is moved out of its statement matters: Python evaluates a statement's
parts left to right, and a call made before the comprehension could change what it reads (a
random draw, a write). So a comprehension is written out only where no call of its statement
is made before it (``np.sum(np.stack([g(v) for v in x]))``, ``total + sum(...)``), and not
from a conditional expression or ``and``/``or``, which might not evaluate it; one anywhere
else is left for the subset to refuse, with its line.
"""

from __future__ import annotations

import ast

_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp)


def hoist(s, fresh, names: set) -> list:
    """The statements that build ``s``'s comprehensions (each replaced in ``s`` by the name of
    the list it builds), in order; [] when it has none in a place they may be moved from; a
    last None when they replace ``s`` itself (``ys = [...]`` built in ys). ``fresh(prefix)``
    makes a new name; the names made are added to ``names``."""
    value = getattr(s, "value", None)
    if not isinstance(s, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)) or value is None:
        return []
    target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else None
    if isinstance(value, _COMPREHENSIONS) and isinstance(target, ast.Name) and \
            not any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(value)):
        # ys = [...]: built in ys itself (another name for the list would be an alias the subset
        # refuses), unless the comprehension reads ys
        stmts, _ = _loops(value, fresh, names, into=target.id)
        return stmts + [None]
    hoister = _Hoister(fresh, names)
    s.value = hoister.visit(value)
    return hoister.stmts


class _Hoister(ast.NodeTransformer):
    """Each comprehension no call is made before (in Python's order of evaluation) replaced by
    its list's name, its loops kept in ``stmts``; one after a call, or inside a conditional
    expression or ``and``/``or`` (which might not evaluate it), is left where it is."""

    def __init__(self, fresh, names: set):
        self.fresh, self.names, self.stmts, self.called = fresh, names, [], False

    def visit_Call(self, node):
        node.func = self.visit(node.func)
        node.args = [self.visit(a) for a in node.args]
        for kw in node.keywords:
            kw.value = self.visit(kw.value)
        self.called = True  # made once its arguments are evaluated
        return node

    def visit_ListComp(self, node):
        if self.called:
            return node
        stmts, name = _loops(node, self.fresh, self.names)
        self.stmts += stmts
        return ast.copy_location(ast.Name(name, ast.Load()), node)

    visit_GeneratorExp = visit_ListComp

    def visit_IfExp(self, node):
        self.called = self.called or any(isinstance(n, ast.Call) for n in ast.walk(node))
        return node

    visit_BoolOp = visit_Lambda = visit_SetComp = visit_DictComp = visit_IfExp


def _loops(comp, fresh, names: set, into: str | None = None) -> tuple[list, str]:
    """(the statements that build ``comp``'s list, the list's name: ``into``, or a new one)."""
    out_name = into or _unused(fresh, "_lc", names)
    names.add(out_name)
    renamed: dict = {}
    generators = []
    for g in comp.generators:
        it = _Rename(dict(renamed)).visit(g.iter)  # the first iterable is the enclosing scope's
        for t in ast.walk(g.target):
            if isinstance(t, ast.Name):
                # _v_3: apart from the user's names and the generator's own (_v3, _g3: kept values, adjoints)
                renamed[t.id] = _unused(fresh, f"_{t.id}_", names)
                names.add(renamed[t.id])
        generators.append((_Rename(renamed).visit(g.target), it, [_Rename(renamed).visit(c) for c in g.ifs]))
    elt = _Rename(renamed).visit(comp.elt)
    append = ast.Call(ast.Attribute(ast.Name(out_name, ast.Load()), "append", ast.Load()), [elt], [])
    body = [ast.Expr(append)]
    for target, it, ifs in reversed(generators):
        for cond in reversed(ifs):
            body = [ast.If(cond, body, [])]
        body = [ast.For(target, it, body, [], None)]
    start = ast.Assign([ast.Name(out_name, ast.Store())], ast.List([], ast.Load()))
    stmts = [start, body[0]]
    for st in stmts:
        for node in ast.walk(st):  # every new node at the comprehension's line (errors and comments name it)
            if not hasattr(node, "lineno"):
                ast.copy_location(node, comp)
    return stmts, out_name


def _unused(fresh, prefix: str, names: set) -> str:
    name = fresh(prefix)
    while name in names:
        name = fresh(prefix)
    return name


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node

    def visit_ListComp(self, node):  # a nested comprehension: its own scope, left as it is
        return node

    visit_GeneratorExp = visit_SetComp = visit_DictComp = visit_Lambda = visit_ListComp
