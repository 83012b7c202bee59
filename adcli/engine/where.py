"""Find the user's file:line for error messages: the innermost frame outside adcli and NumPy."""

from __future__ import annotations

import dis
import linecache
import os
import sys
import sysconfig

# NumPy's folder is looked up in sys.modules when needed, so this module imports nothing heavy.
_ADCLI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _libraries() -> tuple:
    """Where installed libraries and the standard library live (site-packages, the stdlib):
    their frames are not the user's, as the profiler's default --include says too."""
    paths = sysconfig.get_paths()
    dirs = {os.path.abspath(paths[k]) for k in ("purelib", "platlib", "stdlib", "platstdlib") if paths.get(k)}
    return tuple(d + os.sep for d in sorted(dirs))


_LIBRARIES: tuple | None = None


def _skip() -> tuple:
    """adcli's folder, then NumPy's (last: numpy_entry names its functions "np.*"), with the
    library folders in front."""
    global _LIBRARIES
    if _LIBRARIES is None:
        _LIBRARIES = _libraries()
    dirs = [_ADCLI_DIR + os.sep]
    numpy = sys.modules.get("numpy")
    if numpy is not None and getattr(numpy, "__file__", None):
        dirs.append(os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep)
    # adcli and NumPy themselves may sit inside site-packages: keep them last, as named above
    return tuple(d for d in _LIBRARIES if not _ADCLI_DIR.startswith(d.rstrip(os.sep))) + tuple(dirs)


def is_user_file(path: str) -> bool:
    """Whether ``path`` is the program's own code: not adcli's, NumPy's, an installed library's
    or the standard library's. (Cached: engine.lists asks it of every loaded module's file.)"""
    known = _USER_FILES.get(path)
    if known is None:
        known = _USER_FILES[path] = _is_user_file(path)
    return known


_USER_FILES: dict = {}


def _is_user_file(path: str) -> bool:
    filename = os.path.abspath(path)
    return not filename.startswith(_skip()) and not filename.startswith("<frozen")


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


def numpy_entry(depth: int = 1) -> str | None:
    """The NumPy function the user's code called that led here (``"np.full"`` when the user wrote
    ``np.full(...)`` and NumPy's body ended up converting a traced value), or None when the user
    frame is reached without passing through NumPy's Python code."""
    skip = _skip()
    numpy = sys.modules.get("numpy")
    numpy_dir = skip[-1] if numpy is not None and getattr(numpy, "__file__", None) else None
    frame = sys._getframe(depth)
    found = None
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        module = frame.f_globals.get("__name__", "")
        if numpy_dir is not None and filename.startswith(numpy_dir):
            found = "np" + _public(module or "numpy")[5:] + "." + frame.f_code.co_name
        elif filename.startswith(skip) and not filename.startswith(_ADCLI_DIR + os.sep) and module \
                and not module.startswith(("importlib", "functools", "contextlib")):
            # another library's: scipy.special.logsumexp, scipy.stats.rv_continuous.logpdf
            found = _public(module) + "." + getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        elif not filename.startswith(skip) and not filename.startswith("<frozen"):
            return found
        frame = frame.f_back
    return None


def _public(module: str) -> str:
    """``numpy._core.numeric`` -> ``numpy``; ``numpy.linalg._linalg`` -> ``numpy.linalg``;
    ``scipy.special._logsumexp`` -> ``scipy.special``."""
    parts = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        parts.append(part)
    public = ".".join(parts) or module
    return "numpy" if public == "numpy.lib" else public


def user_instruction(depth: int = 1) -> str | None:
    """The bytecode operation the user's frame is executing (``STORE_SUBSCR`` for
    ``plain[i] = v``, ``BINARY_OP`` for ``p += v``), to name what the user wrote in errors."""
    frame = user_frame(depth + 1)
    if frame is None:
        return None
    for ins in dis.get_instructions(frame.f_code):
        if ins.offset == frame.f_lasti:
            return ins.opname
    return None


def user_callee(depth: int = 1) -> str | None:
    """The function the user's frame is calling now, as written (``"math.sin"`` for
    ``math.sin(x[0])``), from the call's source span; None if it is not a call or unknown."""
    frame = user_frame(depth + 1)
    if frame is None or not hasattr(frame.f_code, "co_positions"):
        return None
    ops = list(dis.get_instructions(frame.f_code))
    at = next((i for i, ins in enumerate(ops) if ins.offset == frame.f_lasti), None)
    if at is None or not ops[at].opname.startswith("CALL"):
        return None
    positions = list(frame.f_code.co_positions())
    pos = positions[frame.f_lasti // 2] if frame.f_lasti // 2 < len(positions) else None
    if pos is None or None in pos or pos[0] != pos[1]:
        return None
    text = linecache.getline(frame.f_code.co_filename, pos[0])[pos[2]:pos[3]]
    callee = text.split("(", 1)[0].strip()
    return callee if callee and all(p.isidentifier() for p in callee.split(".")) else None


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
