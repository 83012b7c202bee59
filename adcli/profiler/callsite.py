"""Find a closure or a method as the program calls it: run the user's script, compiled as
``adcli profile`` compiles it (every function of the script and of the modules it imports from
its folder a dispatch point), to the first call of each wanted signature made while a gradient
is recorded, and keep the function object called (a closure with its captured variables) and
the call's arguments as plain values (a method's ``self`` among them). The run stops there.

A closure is created by running its defining function, and a method's ``self`` is whatever the
program built: neither can be rebuilt from a profile, which records only the arguments it can
encode. This is how ``adcli check --script`` and the tests ``adcli export`` writes get them.
Only for a script the user names: nothing a profile says is run or imported here.

>>> site = first_call("prog.py", "__main__:make_loss.<locals>.loss(f64[1d])")  # doctest: +SKIP
>>> site.func(*site.args)                                                       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..engine import hooks
from ..engine.core import Tracer
from ..engine.fills import unfill
from ..engine.pytree import flatten
from ..engine.signature import Signature, signature_key
from ..errors import AdcliError
from .paths import default_excluded
from .runner import ScriptError, run_script


@dataclass
class CallSite:
    """The first call of a signature: ``func`` the undecorated function the program called,
    ``args`` and ``kwargs`` its arguments as plain values (traced ones by their values, arrays
    copied)."""

    func: Callable
    args: tuple
    kwargs: dict = field(default_factory=dict)


class CallSiteError(AdcliError):
    """The program ran to its end without calling the wanted function with the wanted signature."""


class _Found(BaseException):
    """Raised out of the program once every wanted call is found: its run ends there."""


class _Watch(hooks.Session):
    """The engine's hook while the program runs: notes the first call of each wanted
    ``(module, qualname, signature key)`` made inside a gradient, then stops the program."""

    def __init__(self, wanted: set, root_dir: str, files: tuple):
        self.wanted, self.found = set(wanted), {}
        self.root_dir = os.path.abspath(root_dir) + os.sep
        self.files = {os.path.realpath(f) for f in files}
        self.local = threading.local()

    def is_user_path(self, filename: str) -> bool:
        """The script's folder (as for ``adcli profile``) and the files the user named."""
        if filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        return os.path.realpath(path) in self.files or (path.startswith(self.root_dir) and not default_excluded(path))

    def start(self, tape, f, args=(), kwargs=None) -> None:
        self.local.depth = getattr(self.local, "depth", 0) + 1

    def finish(self, tape) -> None:
        self.local.depth = getattr(self.local, "depth", 1) - 1

    def numpy_call(self, module, qualname, source, fn, spread, args, kwargs, func=None):
        if func is not None and getattr(self.local, "depth", 0) > 0:
            key = (module, qualname, signature_key(args, kwargs))
            if key in self.wanted and key not in self.found:
                self.found[key] = CallSite(func, tuple(_plain(a) for a in args), {k: _plain(v) for k, v in kwargs.items()})
                if len(self.found) == len(self.wanted):
                    raise _Found
        return fn(*args, **kwargs) if spread else fn(args, kwargs)


def _plain(value):
    """``value`` with traced leaves replaced by their values, arrays copied (the program goes
    on changing its own); other objects (a method's ``self``) as they are."""
    leaves, unflatten = flatten(unfill(value))
    if len(leaves) == 1 and leaves[0] is value and not isinstance(value, (Tracer, np.ndarray)):
        return value
    return unflatten([np.array(v.value if isinstance(v, Tracer) else v, copy=True)
                      if isinstance(v, (Tracer, np.ndarray)) else v for v in leaves])


def first_calls(script: str, wanted: set, files: tuple = ()) -> dict:
    """Run ``script`` to the first call, inside a gradient, of each wanted ``(module, qualname,
    signature key)``; return ``{wanted: CallSite}`` for those it made (the run stops when all
    are found). ``files``: the user's other modules (--module), made dispatch points when the
    script imports them. The user's modules already imported are imported afresh for the run
    (dispatch points in them) and put back afterwards; the program's printed output is
    dropped. ScriptError if the script cannot be read or compiled."""
    if not os.path.isfile(script):
        raise ScriptError(f"no script at {script}")
    watch = _Watch(wanted, os.path.dirname(os.path.abspath(script)), tuple(files))
    saved = {name: m for name, m in list(sys.modules.items())
             if name != "__main__" and watch.is_user_path(getattr(m, "__file__", None) or "<none>")}
    for name in saved:
        del sys.modules[name]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run_script(watch, script, [])
    finally:
        for name, m in list(sys.modules.items()):
            if name not in saved and name != "__main__" and watch.is_user_path(getattr(m, "__file__", None) or "<none>"):
                del sys.modules[name]
        sys.modules.update(saved)
    return watch.found


def first_call(script: str, signature: str | Signature, files: tuple = ()) -> CallSite:
    """The first call of ``signature`` (``"__main__:Model.loss(obj(__main__.Model), f64[1d])"``,
    as ``adcli suggest`` prints it) that ``script`` makes inside a gradient; CallSiteError if it
    makes none."""
    try:
        sig = signature if isinstance(signature, Signature) else Signature.parse(signature)
    except ValueError as exc:
        raise CallSiteError(str(exc)) from None
    key = (sig.module, sig.qualname, sig.key)
    found = first_calls(script, {key}, files)
    if key not in found:
        raise CallSiteError(f"{script} ran to its end without calling {sig} inside a gradient")
    return found[key]
