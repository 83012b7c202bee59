"""Define a script's functions, as ``__main__``, without running its main block.

Rules for a script's functions are declared by name (``"__main__:loss"``); ``adcli check
--script`` and the tests ``adcli export --script`` writes need those functions to exist. The
script is compiled as ``adcli profile`` compiles it (every function a dispatch point) and its
definitions run: imports, functions, classes and top-level assignments (the data the functions
read), but not the ``if __name__ == "__main__":`` block, top-level loops or bare calls (a
training loop, ``print``, ``main()``), which do the program's work. Errors name the script's own
lines. The script's folder goes on ``sys.path`` first, as ``python script.py`` puts it there, so
its helper modules import. Only for a script the user names: nothing a profile says is ever run.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import traceback

from ..rules.instrument import instrument
from .runner import ScriptError, on_sys_path

_loaded: dict = {}  # absolute path -> the module made from it


def load_script(script: str, reload: bool = False):
    """Make ``script``'s functions the ``__main__`` module's (once per path unless ``reload``);
    returns the module. ScriptError (one line) if it cannot be read, compiled or run."""
    path = os.path.abspath(script)
    if not reload and path in _loaded:
        sys.modules["__main__"] = _loaded[path]
        return _loaded[path]
    if not os.path.isfile(script):
        raise ScriptError(f"no script at {script}")
    on_sys_path(script)
    try:
        with open(script, "rb") as f:
            tree = ast.parse(f.read(), filename=script)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes
        where = f"{script}:{exc.lineno}" if getattr(exc, "lineno", None) else script
        raise ScriptError(f"{where}: the script cannot be compiled: {getattr(exc, 'msg', exc)}") from None
    except OSError as exc:
        raise ScriptError(f"cannot read {script}: {exc.strerror or exc}") from None
    tree.body = [s for s in tree.body if _defines(s)]
    module = type(sys)("__main__")
    module.__file__ = path
    code = instrument(tree, script)  # the file's own line numbers, for errors
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    except SystemExit as exc:
        sys.modules["__main__"] = saved
        raise ScriptError(f"{script} called sys.exit({exc.code!r}) while its functions were being defined: "
                          "move that code under `if __name__ == \"__main__\":`") from None
    except Exception as exc:  # noqa: BLE001 - the script's own error, reported in one line
        sys.modules["__main__"] = saved
        frames = [fr for fr in traceback.extract_tb(exc.__traceback__) if os.path.abspath(fr.filename) == path]
        line = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else script
        raise ScriptError(f"{line}: the script's top level raised {type(exc).__name__}: {exc}") from None
    _loaded[path] = module
    return module


def load_module(path: str, name: str):
    """The user's module ``name`` from the file ``path`` they named (``--module``): the module
    already imported from that file, else imported from it (its package's root first on
    ``sys.path``, as Python would find it), under its name. ScriptError (one line) if it
    cannot be imported."""
    real = os.path.realpath(path)
    module = sys.modules.get(name)
    if module is not None and os.path.realpath(getattr(module, "__file__", None) or "") == real:
        return module
    root = os.path.dirname(real)
    for _ in range(name.count(".")):
        root = os.path.dirname(root)
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location(name, real)
    if spec is None or spec.loader is None:
        raise ScriptError(f"cannot import {path} as {name}")
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get(name)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the module's own error, reported in one line
        if saved is None:
            del sys.modules[name]
        else:
            sys.modules[name] = saved
        raise ScriptError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from None
    return module


def _defines(stmt) -> bool:
    """Whether a top-level statement is kept: imports, definitions, assignments (the data the
    functions read) and blocks that may hold them; not the main block, loops, or bare calls
    (a training loop, ``print(...)``, ``main()``), which do the program's work."""
    if _is_main_guard(stmt) or isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return False
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)  # a docstring
    return True


def _is_main_guard(stmt) -> bool:
    return (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare)
            and isinstance(stmt.test.left, ast.Name) and stmt.test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in stmt.test.comparators))
