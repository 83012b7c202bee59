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

Without ``--script``, export takes the script the profile records (``recorded_script``) only
when it is a ``.py`` file found here (as recorded, else next to the profile) and, like
``--script``, only for the functions its syntax tree defines; the export's message names it,
and the module's tests load it (its definitions, never its main block) when the user runs
them. A recorded script not found leaves its functions declared by name only: no code of the
module resolves that name until the user's own script defines it, and their tests fail saying
which script is missing, until the module is exported again with ``--script``.
"""

from __future__ import annotations

import ast
import inspect
import os

import numpy as np

from ..engine.signature import Signature
from ..errors import AdcliError
from ..rules.catalog import is_library_callable, library_callable, numpy_expression


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
    return definition(path, qualname) is not None


def definition(path: str, qualname: str) -> ast.FunctionDef | None:
    """The definition of the function ``qualname`` in the Python file ``path``, from its syntax
    tree (nothing is run), or None."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    scope: list = tree.body
    found = None
    for part in qualname.split("."):
        if part == "<locals>":
            if not isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None
            continue
        found = next((d for d in _definitions(scope) if d.name == part), None)
        if found is None:
            return None
        scope = found.body
    return found if isinstance(found, ast.FunctionDef) else None


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
    if sig.module == "__main__" and script is None:
        return repr(sig.target), ""
    if defining_file(sig, script, modules) is not None:
        return repr(sig.target), ""
    if sig.module == "__main__":
        return None, f"{script} does not define {sig.qualname}"
    return None, f"{sig.function} is not defined in a file you passed (--module FILE names your modules)"


def defining_file(sig: Signature, script: str | None, modules: tuple) -> str | None:
    """The file among those the user passed that defines ``sig``'s user function, or None."""
    if sig.module == "__main__":
        return script if script is not None and defines(script, sig.qualname) else None
    return next((p for p in modules if sig.module in module_names(p) and defines(p, sig.qualname)), None)


def parameters(sig: Signature, library: bool, script: str | None, modules: tuple) -> list | None:
    """The names of the parameters ``sig``'s positional arguments bind to, as the function
    defines them, or None when that is not known: a user function's from the syntax tree of
    the file that defines it (nothing is imported or run), a library function's from the
    catalog's own object. Only names; the stub writer still checks each is an identifier."""
    n = len(sig.args)
    if library:
        func = library_callable(sig.function)
        if isinstance(func, np.ufunc):  # no Python signature; NumPy's documentation calls them so
            names = ["x"] if func.nin == 1 else [f"x{i + 1}" for i in range(func.nin)]
        else:
            try:
                params = list(inspect.signature(func).parameters.values()) if func is not None else []
            except (TypeError, ValueError):  # a builtin without a signature
                params = []
            names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    else:
        path = defining_file(sig, script, modules)
        node = definition(path, sig.qualname) if path is not None else None
        names = [a.arg for a in node.args.posonlyargs + node.args.args] if node is not None else []
    return names[:n] if n and len(names) >= n else None


def recorded_script(profile: str, command: list) -> tuple[str | None, str | None]:
    """(the script the profile's ``command`` records, found as a ``.py`` file: as recorded, or
    relative to the profile's folder; the recorded text when it is not found). A module run
    (``-m pkg``) records no script."""
    if not command or not command[0] or command[0].startswith("-m "):
        return None, None
    text = command[0]
    where = [text] if os.path.isabs(text) else [text, os.path.join(os.path.dirname(os.path.abspath(profile)), text)]
    found = next((p for p in where if p.endswith(".py") and os.path.isfile(p)), None)
    return (found, None) if found is not None else (None, text)


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
