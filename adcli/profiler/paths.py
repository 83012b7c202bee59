"""Which source files are the user's: everything but the standard library, site-packages and adcli."""

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
