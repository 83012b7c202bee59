"""List comprehensions and generator expressions, written out as the loops they are, so that
the rest of the subset differentiates them: ``ys = [f(x) for x in xs if x.sum() > 0]`` becomes

    _lc1 = []
    for _x2 in xs:
        if _x2.sum() > 0:
            _lc1.append(f(_x2))
    ys = _lc1

(the loop variables renamed: a comprehension's do not leak into the function). A generator
expression is made a list the same way (``sum(x * x for x in xs)``): its value is the same,
only built before its consumer runs.

Where a comprehension is moved out of its statement matters: Python evaluates a statement's
parts left to right, and a call made before the comprehension could change what it reads (a
random draw, a write). So only a comprehension that is the statement's value (assigned,
appended, returned), or an argument of the call that is, whose other arguments call nothing,
is written out; one anywhere else is left for the subset to refuse, with its line.
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
    if isinstance(s, ast.Expr) and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "append":
        holder, field = value, "args"  # xs.append([...])
    elif isinstance(value, _COMPREHENSIONS):
        # ys = [...]: built in ys itself (another name for the list would be an alias the subset
        # refuses), unless the comprehension reads ys
        target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else None
        if isinstance(target, ast.Name) and not any(isinstance(n, ast.Name) and n.id == target.id
                                                    for n in ast.walk(value)):
            stmts, _ = _loops(value, fresh, names, into=target.id)
            return stmts + [None]  # the statement itself is done: the loops bind its name
        return _build(s, "value", fresh, names)
    elif isinstance(value, ast.Call):
        holder, field = value, "args"
    else:
        return []
    args = getattr(holder, field)
    comps = [k for k, a in enumerate(args) if isinstance(a, _COMPREHENSIONS)]
    others = [a for k, a in enumerate(args) if k not in comps] + [kw.value for kw in holder.keywords]
    if not comps or any(isinstance(n, ast.Call) for o in others for n in ast.walk(o)):
        return []
    out = []
    for k in comps:
        out += _build_at(holder, args, k, fresh, names)
    return out


def _build(s, field: str, fresh, names: set) -> list:
    comp = getattr(s, field)
    stmts, name = _loops(comp, fresh, names)
    setattr(s, field, ast.copy_location(ast.Name(name, ast.Load()), comp))
    return stmts


def _build_at(holder, args: list, k: int, fresh, names: set) -> list:
    comp = args[k]
    stmts, name = _loops(comp, fresh, names)
    args[k] = ast.copy_location(ast.Name(name, ast.Load()), comp)
    return stmts


def _loops(comp, fresh, names: set, into: str | None = None) -> tuple[list, str]:
    """(the statements that build ``comp``'s list, the list's name: ``into``, or a new one)."""
    out_name = into or fresh("_lc")
    names.add(out_name)
    renamed: dict = {}
    generators = []
    for g in comp.generators:
        it = _Rename(dict(renamed)).visit(g.iter)  # the first iterable is the enclosing scope's
        for t in ast.walk(g.target):
            if isinstance(t, ast.Name):
                renamed[t.id] = fresh(f"_{t.id}")
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
