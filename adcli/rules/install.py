"""Rules in a plain program: ``adcli.rules.install("rules.py")``.

A rule for one of your functions serves where calls go through a dispatch point (rules/dispatch.py):
under ``adcli profile`` and ``adcli check`` every function of the script and of the modules it
imports from its folder is one. In a program run as ``python prog.py``, ``install`` makes them so:

    import adcli.rules
    adcli.rules.install("rules.py")   # the first statement that does work

* The rules file is loaded (once per path; its folder first on ``sys.path``).
* Called at the top level of the script being run, ``install`` runs the script again from its
  start, compiled as ``adcli profile`` compiles it, and the user's modules it imports (files
  under its folder, not the standard library or site-packages) afresh the same way; the process
  then ends with the script (``SystemExit``, its exit status). Every function, method and closure
  they define is a dispatch point, so every target ``adcli suggest`` names is served. The
  statements before the call run twice: put it first.
* Called anywhere else (inside a function, in a notebook, from a module): the functions already
  defined are made dispatch points in place (rules/inplace.py), user modules imported later are
  compiled with dispatch points, and in IPython so are the cells run later.

Under ``adcli profile`` or ``adcli check`` (already compiled so) only the rules are loaded.
``uninstall()`` removes the rules, the import hook and the in-place changes.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import types

from ..engine.registry import declared_rules, remove_rule
from ..errors import RuleError
from .inplace import serve_loaded
from .instrument import ALIAS, Decorate, UserModuleFinder, default_excluded, instrument

_loaded: dict = {}  # absolute path of a rules file -> (its module, the rules it declared)
_state: dict = {"finder": None, "served": [], "cells": None}


def install(path: str) -> list:
    """Make every rule of the rules file ``path`` serve in this program (see the module);
    returns the rules it declared."""
    rules = _load(path)
    caller = sys._getframe(1)
    root = _root()
    _finder(root)
    if _reruns(caller):
        _rerun(caller.f_globals, root)  # does not return
    if ALIAS not in caller.f_globals:
        _state["served"].append(serve_loaded(lambda f: _is_user_path(f, root)))
        _cells()
    return rules


def uninstall() -> None:
    """Undo every ``install``: its rules unregistered, its import hook removed, the functions it
    made dispatch points in place restored."""
    finder = _state["finder"]
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    _state["finder"] = None
    for served in reversed(_state["served"]):
        served.undo()
    _state["served"].clear()
    shell, transformer = _state["cells"] or (None, None)
    if transformer in getattr(shell, "ast_transformers", ()):
        shell.ast_transformers.remove(transformer)
    _state["cells"] = None
    mine = {id(r) for _, rules in _loaded.values() for r in rules}
    for r in declared_rules():
        if id(r) in mine:
            remove_rule(r)
    _loaded.clear()


def _load(path: str) -> list:
    full = os.path.realpath(path)
    if full in _loaded:
        return _loaded[full][1]
    if not os.path.isfile(full):
        raise RuleError(f"no rules file at {path}")
    folder = os.path.dirname(full)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    before = {id(r) for r in declared_rules()}
    name = f"adcli_installed_{os.path.splitext(os.path.basename(full))[0]}_{abs(hash(full)) % 10**8}"
    spec = importlib.util.spec_from_file_location(name, full)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        for r in declared_rules():  # all or nothing
            if id(r) not in before:
                remove_rule(r)
        raise
    _loaded[full] = (module, [r for r in declared_rules() if id(r) not in before])
    return _loaded[full][1]


def _root() -> str:
    """The folder whose files are the user's: the running script's, else (a notebook, a tool
    such as pytest running the program) the current one."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(script, str) and script.endswith(".py") and not default_excluded(os.path.abspath(script)):
        return os.path.dirname(os.path.abspath(script))
    return os.getcwd()


def _is_user_path(f, root: str) -> bool:
    filename = f if isinstance(f, str) else f.__code__.co_filename
    path = os.path.abspath(filename)
    return not filename.startswith("<") and path.startswith(root + os.sep) and not default_excluded(path)


def _finder(root: str) -> None:
    """Modules imported from now on whose file is the user's get dispatch points."""
    if _state["finder"] is None:
        _state["finder"] = UserModuleFinder(lambda filename: _is_user_path(filename, root))
        sys.meta_path.insert(0, _state["finder"])


def _reruns(frame) -> bool:
    """Whether ``install`` was called at the top level of the script Python is running, which
    was compiled without dispatch points."""
    g = frame.f_globals
    return (g.get("__name__") == "__main__" and frame.f_code.co_name == "<module>" and ALIAS not in g
            and sys.modules.get("__main__") is not None and sys.modules["__main__"].__dict__ is g
            and isinstance(g.get("__file__"), str) and g["__file__"].endswith(".py") and os.path.isfile(g["__file__"]))


def _rerun(g: dict, root: str):
    """Run the script from its start with dispatch points, the user's modules imported afresh;
    end the process with it."""
    script = os.path.abspath(g["__file__"])
    with open(script, "rb") as f:
        code = instrument(f.read(), script)
    keep = {module.__name__ for module, _ in _loaded.values()}  # the rules files: loaded once
    for name, module in list(sys.modules.items()):
        if name != "__main__" and name not in keep and _is_user_path(getattr(module, "__file__", None) or "<", root):
            del sys.modules[name]
    main = types.ModuleType("__main__")
    main.__dict__.update({k: g[k] for k in ("__file__", "__package__", "__spec__", "__loader__", "__builtins__",
                                            "__cached__", "__doc__") if k in g})
    sys.modules["__main__"] = main
    exec(code, main.__dict__)
    raise SystemExit(0)


class _DispatchCells(ast.NodeTransformer):
    """IPython's hook on each cell's syntax tree: its functions become dispatch points."""

    def visit_Module(self, node):
        return Decorate().visit(node)


def _cells() -> None:
    """In IPython: the cells run from now on define dispatch points."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None or _state["cells"] is not None or not hasattr(shell, "ast_transformers"):
        return
    shell.user_ns.setdefault(ALIAS, sys.modules[__package__])
    transformer = _DispatchCells()
    shell.ast_transformers.append(transformer)
    _state["cells"] = (shell, transformer)

