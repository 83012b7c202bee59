"""What ``adcli export`` may name and ``adcli check`` may call: the profile's trust boundary.

A profile (untrusted: users share them) names callables as text. Generated code and ``check``
name only

* library callables in the engine's own catalog (rules/catalog.py), found there by name and
  written as the expression that gives the catalog's object (checked by identity), and
* the user's functions, found in files the user names on the command line: ``--script`` (the
  profiled script, for ``__main__`` functions), ``--module`` (the user's other modules) and,
  for ``check``, the rules file itself. Export finds a definition in a file's syntax tree
  (nothing is imported or run); check compares the function object's own module, qualified
  name and source file.

A ``__main__`` function exported without ``--script`` is declared by name only: no code of the
module resolves that name until the user's own script defines it, and its test refuses to run
until the module is exported again with ``--script``.
"""

from __future__ import annotations

import ast
import inspect
import os

from ..engine.signature import Signature
from ..errors import AdcliError
from ..rules.catalog import is_library_callable, numpy_expression


class UntrustedTargetError(AdcliError):
    """A rule names a callable that is neither in adcli's catalog nor defined in a file the user passed."""


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def module_names(path: str) -> set:
    """The module names a file can have: ``a/b/c.py`` is ``c``, ``b.c`` or ``a.b.c``
    (``a/b/__init__.py`` is ``b`` or ``a.b``)."""
    parts = os.path.normpath(path).split(os.sep)
    parts[-1] = parts[-1][:-3] if parts[-1].endswith(".py") else parts[-1]
    if parts[-1] == "__init__":
        parts.pop()
    parts = [p for p in parts if p not in ("", ".", "..")]
    return {".".join(parts[i:]) for i in range(len(parts))}


def defines(path: str, qualname: str) -> bool:
    """Whether the Python file ``path`` defines the function ``qualname`` (``f``,
    ``Model.loss``, ``make.<locals>.loss``), read from its syntax tree: nothing is run."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    scope: list = tree.body
    parts = qualname.split(".")
    found = None
    for i, part in enumerate(parts):
        if part == "<locals>":
            if not isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return False
            continue
        found = next((d for d in _definitions(scope) if d.name == part), None)
        if found is None:
            return False
        scope = found.body
    return isinstance(found, ast.FunctionDef)


def _definitions(body: list) -> list:
    """The functions and classes a block defines, inside its if / try / with blocks too."""
    out, stack = [], list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                stack.extend(getattr(node, field, ()))
            stack.extend(s for h in getattr(node, "handlers", ()) for s in h.body)
    return out


def export_target(sig: Signature, library: bool, script: str | None, modules: tuple) -> tuple[str | None, str]:
    """(the Python expression a rule module names ``sig``'s callable by, or None; why not).
    ``library``: a NumPy/SciPy signature (found in the catalog only); else a user function
    (found in ``script`` for ``__main__``, in one of ``modules`` otherwise)."""
    if library:
        expr = numpy_expression(sig.function)
        return (expr, "") if expr else (None, f"{sig.function} is not a NumPy callable adcli has a rule for or can import")
    if sig.module == "__main__":
        if script is None:
            return repr(sig.target), ""
        if defines(script, sig.qualname):
            return repr(sig.target), ""
        return None, f"{script} does not define {sig.qualname}"
    for path in modules:
        if sig.module in module_names(path) and defines(path, sig.qualname):
            return repr(sig.target), ""
    return None, f"{sig.function} is not defined in a file you passed (--module FILE names your modules)"


def check_target(rule, func, files: list[str]) -> None:
    """Refuse (UntrustedTargetError) to check a rule whose callable ``func`` is neither in the
    catalog (by identity) nor a function defined, under the rule's own name, in one of
    ``files`` (the rules file, --script, --module)."""
    allowed = {_real(p) for p in files if p}
    code = func.__code__ if inspect.isfunction(func) else None
    mine = code is not None and _real(code.co_filename) in allowed
    if isinstance(rule.target, tuple):
        mine = mine and (func.__module__, func.__qualname__) == rule.target
    elif not mine and is_library_callable(func):
        return
    if not mine:
        where = f" (it is defined in {code.co_filename}: pass --module FILE with that file if it is yours)" \
            if code is not None and _real(code.co_filename) not in allowed else ""
        raise UntrustedTargetError(
            f"refusing to check the rule for {rule.signature}: its callable is neither a library function in adcli's "
            f"catalog nor a function defined in a file you passed (the rules file, --script SCRIPT, --module FILE){where}")
