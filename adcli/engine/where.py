"""Find the user's file:line for error messages: the innermost frame outside adcli and NumPy."""

from __future__ import annotations

import linecache
import os
import sys

# No NumPy import here: the tape module (which must not import NumPy) uses this too.
_ADCLI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _skip() -> tuple:
    dirs = [_ADCLI_DIR]
    numpy = sys.modules.get("numpy")
    if numpy is not None and getattr(numpy, "__file__", None):
        dirs.append(os.path.dirname(os.path.abspath(numpy.__file__)))
    return tuple(d + os.sep for d in dirs)


def user_frame(depth: int = 1):
    """The innermost frame whose code is neither adcli's nor NumPy's, or None."""
    skip = _skip()
    frame = sys._getframe(depth)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(skip) and not filename.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


def user_location(depth: int = 2) -> str:
    """``"path/to/file.py:12 (`the source line`)"`` for the user's innermost frame."""
    frame = user_frame(depth)
    if frame is None:
        return "<unknown location>"
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    line = linecache.getline(filename, lineno).strip()
    where = f"{_short(filename)}:{lineno}"
    return f"{where} (`{line}`)" if line else where


def _short(filename: str) -> str:
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return rel if not rel.startswith(".." + os.sep + "..") else filename
