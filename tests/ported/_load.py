"""Load a ported program as it is ("adcli"), or with its imports turned back into autograd's ("autograd").

Every program in this package imports NumPy as ``import numpy as np``, SciPy through names that start
with ``scipy.`` (``import scipy.special as sp``, ``from scipy.stats import norm``, ``import scipy.signal``)
and the gradient as ``from adcli import grad``. The autograd flavour rewrites exactly those forms
(``import autograd.numpy as np``, ``autograd.scipy.``, ``from autograd import``) and executes the
result as a fresh module; an import left in another form is an error, so a program can never run half
on plain NumPy.
"""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
FLAVOURS = ("adcli", "autograd")

_REWRITES = (
    (re.compile(r"^(\s*)import numpy as np$", re.M), r"\1import autograd.numpy as np"),
    (re.compile(r"(?<![\w.])scipy\."), "autograd.scipy."),
    (re.compile(r"^(\s*)from adcli import\b", re.M), r"\1from autograd import"),
)
_LEFT_OVER = re.compile(r"^\s*(?:import|from)\s+(?:numpy|scipy|adcli)\b.*$", re.M)


def names() -> list[str]:
    """The programs: every module of this package whose name does not start with an underscore."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def autograd_source(name: str) -> str:
    """The program's source with its imports rewritten to autograd's."""
    text = (HERE / f"{name}.py").read_text()
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    left = _LEFT_OVER.findall(text)
    if left:
        raise ValueError(f"tests/ported/{name}.py: cannot rewrite these imports for autograd: {left}")
    return text


def load(name: str, flavour: str = "adcli") -> tuple[Callable, Callable]:
    """``(loss, make_inputs)`` of program ``name`` in the given flavour ("adcli" or "autograd")."""
    if name not in names():
        raise ValueError(f"no ported program named {name!r}; have {names()}")
    if flavour == "adcli":
        module = importlib.import_module(f"{__package__}.{name}")
    elif flavour == "autograd":
        path = HERE / f"{name}.py"
        module = types.ModuleType(f"{__package__}.autograd_{name}")
        module.__file__ = str(path)
        # compiled under the original path: the rewrite keeps every line where it was
        exec(compile(autograd_source(name), str(path), "exec"), module.__dict__)
    else:
        raise ValueError(f"flavour must be one of {FLAVOURS}, not {flavour!r}")
    return module.loss, module.make_inputs
