"""Which source files are the user's (everything but the standard library, site-packages and
adcli), and where a user function is, as a profile says it."""

from __future__ import annotations

import os

from ..rules.instrument import default_excluded

__all__ = ["code_location", "default_excluded"]

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
