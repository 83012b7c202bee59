"""The programs of a corpus: what ``adcli corpus run`` is given (scripts, folders of scripts,
modules, a project's tests) as a list of :class:`Program`, each with a key that changes when its source, its
arguments, the profiling options or adcli's version do (a run skips the programs already stored
under their key whose inputs, the other files they read, are unchanged: inputs.py).

A folder's programs are its ``.py`` files, at any depth, that import adcli (the programs that
can take a gradient through it), tests and packages' ``__init__``/``setup``/``conftest`` files
left out. A script named on its own is a program whatever it imports. A module is looked up
with ``importlib.util.find_spec`` (its parent packages are imported, as ``python -m`` does). A
test suite's programs are its tests, one each (every test that takes a gradient is a program;
one that takes none is recorded as such).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from ..errors import AdcliError

_IMPORTS_ADCLI = re.compile(rb"^\s*(import adcli|from adcli\b)", re.MULTILINE)
_NOT_PROGRAMS = {"__init__.py", "setup.py", "conftest.py", "__main__.py"}


class CorpusError(AdcliError):
    """A corpus target or store that cannot be used (named in the message)."""


@dataclass(frozen=True)
class Program:
    """One program: ``kind`` "script" (``target`` its absolute path), "module" (its name) or
    "test" (its pytest node id, run from ``cwd``)."""

    name: str  # as shown and stored: the path as given (relative), or the module's name
    kind: str
    target: str
    cwd: str  # where it runs: the script's folder, or the current directory for a module
    source: str  # the file whose text is part of the key

    def key(self, version: str, options: tuple) -> str:
        """A digest of what its profile depends on: source, target, options, adcli's version."""
        h = hashlib.sha256()
        for part in (self.kind, self.target, version, repr(options)):
            h.update(part.encode() + b"\0")
        try:
            with open(self.source, "rb") as f:
                h.update(f.read())
        except OSError as exc:
            raise CorpusError(f"cannot read {self.name}: {exc}") from None
        return h.hexdigest()[:32]


def discover(targets: list[str], modules: list[str], tests: list[str] = ()) -> list[Program]:
    """The programs ``targets`` (scripts and folders), ``modules`` and ``tests`` (test files or
    folders: each test pytest collects there) name, each once, in order."""
    found: dict = {}
    for t in targets:
        if os.path.isdir(t):
            for path in sorted(_folder(t)):
                found.setdefault(os.path.realpath(path), _script(path))
        elif os.path.isfile(t):
            found.setdefault(os.path.realpath(t), _script(t))
        else:
            raise CorpusError(f"no script or folder at {t}")
    for m in modules:
        p = _module(m)
        found.setdefault(("module", m), p)
    for t in tests:
        for p in _tests(t):
            found.setdefault(("test", p.target), p)
    if not found:
        raise CorpusError("no programs: name scripts, folders of scripts (.py files that import adcli), -m MODULE "
                          "or --tests PATH")
    return list(found.values())


def _folder(folder: str):
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")) and d not in ("venv", ".venv"))
        for name in files:
            if not name.endswith(".py") or name in _NOT_PROGRAMS or name.startswith("test_"):
                continue
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as f:
                    if _IMPORTS_ADCLI.search(f.read(1 << 20)):
                        yield path
            except OSError:
                continue


def _script(path: str) -> Program:
    full = os.path.abspath(path)
    return Program(os.path.relpath(full) if not os.path.relpath(full).startswith("..") else full, "script", full,
                   os.path.dirname(full), full)


def _module(name: str) -> Program:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise CorpusError(f"module {name}: {exc}") from None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise CorpusError(f"no module {name} (its source file is needed)")
    return Program(name, "module", name, os.getcwd(), spec.origin)


def _tests(path: str) -> list[Program]:
    """Each test pytest collects under ``path`` (``pytest --collect-only``, run in a process of
    its own from the current directory: the project's conftest files and test modules load
    there, not here), as a program that runs that one test."""
    if not os.path.exists(path):
        raise CorpusError(f"no test file or folder at {path}")
    try:
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", path],
                             capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise CorpusError(f"collecting the tests under {path} took over 600 s") from None
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if out.returncode not in (0, 5) or (out.returncode == 0 and not ids):  # 5: no tests collected
        last = (out.stdout.strip().splitlines() or out.stderr.strip().splitlines() or ["?"])[-1]
        raise CorpusError(f"cannot collect the tests under {path}: {last[:200]}")
    cwd = os.getcwd()
    return [Program(node, "test", node, cwd, os.path.abspath(node.split("::", 1)[0])) for node in ids]
