"""Make the user's functions dispatch points: under ``adcli profile``, ``adcli check --script``
and in a program that called ``adcli.rules.install`` (rules/install.py).

The script, and the user modules it imports (files that count as the user's code), are
compiled from an AST in which every function definition gets one more decorator,
``adcli.rules.dispatch``, applied first. A dispatch point lets rules declared for the function
(also by name, ``"__main__:lml"``, ``"__main__:make.<locals>.loss"``) serve traced calls, and
reports its calls to a profiling session (call tree, signature, time) while a gradient is
recorded. Outside gradients it costs one check and a call.

This replaces tracing (``sys.settrace``/``setprofile``), which on Python 3.11 slows every
Python frame of the program, NumPy's own included, by 1.5x or more.

Not instrumented: generator and async functions (their calls do not bracket their work),
lambdas, and modules imported before the run (already in ``sys.modules``). The instrumented
code is never written to ``__pycache__``.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import os
import sys
import sysconfig

ALIAS = "__adcli_rules__"  # the name instrumented code finds adcli.rules by
_ADCLI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(d) + os.sep for d in dirs if d) + (_ADCLI_DIR + os.sep,)


_LIBRARY_DIRS = _library_dirs()


def default_excluded(path: str) -> bool:
    """Not the user's code by default: the standard library, site-packages, adcli itself."""
    return path.startswith(_LIBRARY_DIRS) or "site-packages" in path


class Decorate(ast.NodeTransformer):
    """Append ``__adcli_rules__.dispatch`` to every function definition's decorators (applied
    first), generators' and async functions' excepted; ``skip``: a definition left as it is
    (its nested ones are decorated)."""

    def __init__(self, skip=None):
        self.skip = skip

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        if not _is_generator(node) and node is not self.skip:
            deco = ast.Attribute(value=ast.Name(id=ALIAS, ctx=ast.Load()), attr="dispatch", ctx=ast.Load())
            node.decorator_list.append(ast.copy_location(deco, node))  # last = applied first
        return node

    def visit_AsyncFunctionDef(self, node):
        self.generic_visit(node)
        return node


def _is_generator(fn) -> bool:
    """A yield in the function's own body (not in nested functions or classes)."""
    stack = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def instrument(source, filename: str):
    """Compile ``source`` (text, or an ``ast.Module`` parsed from the file: its line numbers
    are kept) with every function made a dispatch point."""
    tree = source if isinstance(source, ast.Module) else ast.parse(source, filename=filename)
    tree = Decorate().visit(tree)
    # `import adcli.rules as __adcli_rules__` after the docstring and __future__ imports
    at = 0
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            at = i + 1
        elif i == 0 and isinstance(stmt, ast.Expr) and isinstance(getattr(stmt, "value", None), ast.Constant):
            at = 1
    tree.body.insert(at, ast.Import(names=[ast.alias(name="adcli.rules", asname=ALIAS)]))
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", dont_inherit=True)


class _Loader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        source = self.get_data(self.path)
        return instrument(source, self.path)

    def set_data(self, *args, **kwargs):  # never cache instrumented bytecode
        return None


class UserModuleFinder(importlib.abc.MetaPathFinder):
    """Instrument modules imported during the run whose file counts as the user's code."""

    def __init__(self, is_user_path):
        self.is_user_path = is_user_path

    def find_spec(self, fullname, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = getattr(spec, "origin", None) if spec is not None else None
        if origin and origin.endswith(".py") and self.is_user_path(origin):
            spec.loader = _Loader(fullname, origin)
            return spec
        return None


class installed:
    """Context manager: the finder is first on ``sys.meta_path`` for the duration."""

    def __init__(self, finder: UserModuleFinder):
        self.finder = finder

    def __enter__(self):
        sys.meta_path.insert(0, self.finder)
        return self

    def __exit__(self, *exc):
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
