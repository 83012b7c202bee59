"""The library callables adcli knows, by name and by identity: the only library functions that
generated code and ``adcli check`` may call.

A profile names callables as text (``numpy.linalg.solve``); that text is untrusted (a shared
profile can say ``numpy.f2py.subprocess.Popen``), so it is never walked as an attribute path.
It is only a key into this catalog, whose entries are the objects the engine itself has rules
for (its registry: native rules, verified derivations, ufunc rules, SciPy's library dispatch
points) and those autograd has rules for (rules/autograd_catalog.py). A declared rule alone
does not put its target here: declaring is what a rules file does, and a rules file is checked
against this list.
"""

from __future__ import annotations

import functools
import importlib
import keyword

from ..engine import library
from ..engine.registry import REGISTRY, UFUNCS, qualified_name
from .autograd_catalog import catalog


def _engine_entries() -> dict:
    """Name -> callable for what the engine serves by itself."""
    out: dict = {}
    library.resolve_all()  # SciPy's functions with dispatch points, if the process imported SciPy
    for func in list(UFUNCS):
        out.setdefault(qualified_name(func), func)
    for key, e in list(REGISTRY.items()):
        if not isinstance(key, tuple) and (e.native is not None or e.derivation is not None or library.is_key(key)):
            out.setdefault(e.name, key)
    return out


@functools.lru_cache(maxsize=1)
def _autograd_entries() -> dict:
    """Name -> callable for what autograd can give (its catalog is built once; it imports
    autograd's own modules, never anything a profile names)."""
    out: dict = {}
    for entry in catalog():
        for name in (entry.name, *entry.aliases):
            out.setdefault(name, entry.func)
    return out


def library_callable(name: str):
    """The callable the catalog holds under ``name`` (``numpy.kron``), or None."""
    return _engine_entries().get(name) or _autograd_entries().get(name)


def is_library_callable(obj) -> bool:
    """Whether ``obj`` itself (by identity, not by name) is in the catalog."""
    return any(f is obj for table in (_engine_entries(), _autograd_entries()) for f in table.values())


def numpy_expression(name: str) -> str | None:
    """``np.linalg.cholesky`` for the catalog's ``numpy.linalg.cholesky``: a Python expression
    that names the catalog's own object, checked by identity; None for a name the catalog does
    not hold, or whose object NumPy's namespace does not give under that name."""
    func = library_callable(name)
    parts = name.split(".")
    if func is None or parts[0] != "numpy" or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        return None
    obj = importlib.import_module("numpy")
    for part in parts[1:]:  # the catalog's own name: walking it reaches only NumPy's public modules
        obj = getattr(obj, part, None)
    return "np." + ".".join(parts[1:]) if obj is func else None
