"""Writing files so that no reader ever sees half of one, and no user file is lost."""

from __future__ import annotations

import os
import tempfile
from typing import Callable

from .errors import AdcliError


class OutputError(AdcliError):
    """An output file that cannot or must not be written."""


def atomic_write(path: str, write: Callable, binary: bool = False) -> None:
    """Write ``path`` through ``write(file)``: a temporary file in the same folder, then a
    rename, so a reader sees the old file or the new one, never a mix. The new file gets the
    usual permissions (mkstemp's are private)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".adcli-", suffix=".tmp", dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            write(f)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink(tmp)
        raise


def write_text(path: str, text: str) -> None:
    atomic_write(path, lambda f: f.write(text))


def check_writable(path: str, force: bool = False, what: str = "") -> None:
    """Fail before any work is done if ``path`` cannot be written, or exists and ``force`` is
    not given."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise OutputError(f"cannot write {path}: it is a folder")
    if os.path.lexists(path) and not force:
        raise OutputError(f"{path} exists; pass --force to overwrite it{what}")
    if not os.path.isdir(folder):
        raise OutputError(f"cannot write {path}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".adcli-", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
