"""Loading a file as a module under a name of the test's choosing (a benchmark script, a
profiles/ case): it runs the file's top level, not its ``__main__`` block."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def load_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
