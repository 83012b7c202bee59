"""Which source files are the user's (everything but the standard library, site-packages and
adcli), and where a user function is, as a profile says it."""

from __future__ import annotations

import os
import sysconfig

_ADCLI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(d) + os.sep for d in dirs if d) + (_ADCLI_DIR + os.sep,)


_LIBRARY_DIRS = _library_dirs()


def default_excluded(path: str) -> bool:
    """Not the user's code by default: the standard library, site-packages, adcli itself."""
    return path.startswith(_LIBRARY_DIRS) or "site-packages" in path


def code_location(func) -> str:
    """``path/file.py:12``, the line a function starts on, the path relative to the working
    directory when the file is under it; "" for a callable without code."""
    code = getattr(func, "__code__", None)
    if code is None:
        return ""
    try:
        rel = os.path.relpath(code.co_filename)
    except ValueError:  # another drive on Windows
        rel = ".."
    return f"{code.co_filename if rel.startswith('..') else rel}:{code.co_firstlineno}"
