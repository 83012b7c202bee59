"""Make the functions a running program already defined dispatch points, in place: what
``adcli.profile()`` and ``adcli.rules.install`` do for code that was compiled without adcli (a
notebook's cells, a script's functions when ``install`` is called from inside one of them).

For each user function a module holds (its own or imported, by a name) and each method of its
classes, the name or class attribute is rebound to a dispatch point, and the function's code is
replaced by the same source compiled with its nested functions made dispatch points (as
``adcli profile`` compiles a script, rules/instrument.py), so the closures it creates from now
on are served too. A closure the module keeps under a name is rebound like a function.
``Served.undo()`` puts everything back.

Not reached: closures created before and kept elsewhere than under a module's name (in a list,
in another closure), functions without source, generators; a method whose code reads
``__class__`` (``super()``) keeps its code (its nested functions are not dispatch points).
"""

from __future__ import annotations
import __future__

import ast
import inspect
import sys
import textwrap
import types

from .dispatch import dispatch
from .instrument import ALIAS, Decorate, default_excluded

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


_NO_TYPE_PARAMS = {"type_params": []} if "type_params" in ast.ClassDef._fields else {}  # Python 3.12


class Served:
    """What :func:`serve_module` changed, to be undone: ``(holder, name, old)`` triples where
    ``holder`` is a namespace dict, a class, or a function (name ``__code__``)."""

    def __init__(self) -> None:
        self.changes: list = []

    def undo(self) -> None:
        for holder, name, old in reversed(self.changes):
            if isinstance(holder, dict):
                holder[name] = old
            else:
                setattr(holder, name, old)
        self.changes.clear()


def _plain_function(value) -> bool:
    return (isinstance(value, types.FunctionType) and getattr(value, "__adcli_original__", None) is None
            and "<lambda>" not in value.__qualname__
            and not (inspect.isgeneratorfunction(value) or inspect.iscoroutinefunction(value)
                     or inspect.isasyncgenfunction(value)))


def serve_loaded(is_user_path) -> Served:
    """:func:`serve_module` for ``__main__`` (a script, a notebook's namespace: every function it
    defined, and the user's functions it imported) and each loaded module whose file is the
    user's (``is_user_path(filename)``)."""
    served = Served()
    for name, module in list(sys.modules.items()):
        if name == "__main__" and module is not None:
            serve_module(module, lambda f: is_user_path(f.__code__.co_filename) or (  # a notebook's cells too
                f.__module__ == "__main__" and not default_excluded(f.__code__.co_filename)), served)
        elif module is not None and is_user_path(getattr(module, "__file__", None) or "<none>"):
            serve_module(module, lambda f: is_user_path(f.__code__.co_filename), served)
    return served


def serve_module(module, is_users, served: Served | None = None) -> Served:
    """Make the user functions ``module`` holds by name, and the methods of the classes it
    defines, dispatch points (``is_users(function)``: whether a function is the user's);
    return what changed."""
    served = served if served is not None else Served()
    ns = module.__dict__
    for name, value in list(ns.items()):
        if _plain_function(value) and is_users(value):
            _nested_in_place(value, served)
            served.changes.append((ns, name, value))
            ns[name] = dispatch(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            _serve_class(value, is_users, served)
    return served


def _serve_class(cls, is_users, served: Served, depth: int = 0) -> None:
    for attr, value in list(vars(cls).items()):
        if _plain_function(value) and is_users(value):
            _nested_in_place(value, served)
            served.changes.append((cls, attr, value))
            setattr(cls, attr, dispatch(value))
        elif isinstance(value, type) and value.__qualname__ == f"{cls.__qualname__}.{attr}" and depth < 8:
            _serve_class(value, is_users, served, depth + 1)


def _nested_in_place(func, served: Served) -> None:
    """Give ``func`` its own source's code with its nested functions as dispatch points, when it
    has any and the source compiles to a code of the same shape."""
    code = func.__code__
    if "<locals>" in func.__qualname__ or not any(isinstance(c, types.CodeType) and c.co_name != "<lambda>"
                                                    and not c.co_name.startswith("<") for c in code.co_consts):
        return
    new = _recompiled(func)
    if new is None or new.co_freevars != code.co_freevars or new.co_argcount != code.co_argcount:
        return
    func.__globals__.setdefault(ALIAS, sys.modules[__package__])
    served.changes.append((func, "__code__", code))
    func.__code__ = new


def _recompiled(func):
    """``func``'s code compiled again from its source, its nested definitions decorated, inside
    the classes its qualified name says it is in (so that nested functions get the same
    qualified names); None when the source cannot be had or does not match."""
    try:
        lines, first = inspect.getsourcelines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != func.__name__:
        return None
    node = tree.body[0]
    node.decorator_list = []  # the function object exists: only its code is wanted
    Decorate(skip=node).visit(node)
    ast.increment_lineno(tree, first - 1)
    body: ast.stmt = node
    for owner in reversed(func.__qualname__.split(".")[:-1]):  # Model.energy: inside `class Model`
        body = ast.ClassDef(name=owner, bases=[], keywords=[], body=[body], decorator_list=[], **_NO_TYPE_PARAMS)
    module = ast.fix_missing_locations(ast.Module(body=[body], type_ignores=[]))
    try:
        code = compile(module, func.__code__.co_filename, "exec", flags=func.__code__.co_flags & _FUTURE_FLAGS,
                       dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    for _ in func.__qualname__.split(".")[:-1]:
        code = next((c for c in code.co_consts if isinstance(c, types.CodeType)), None)
        if code is None:
            return None
    return next((c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == func.__name__), None)
