"""Writing files so that no reader ever sees half of one, and no user file is lost.

Every file adcli writes is first written to a temporary file in the target's folder, then
renamed over the target (``stage`` then ``publish``): a reader sees the old file or the new one.
Files written together (a profile and its sample arrays) are published together under a lock on
their folder, so two runs writing the same output never interleave their halves. A replaced
file keeps its permissions (a private profile stays private).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import Callable

from .errors import AdcliError

try:  # POSIX; elsewhere files are still published atomically, one by one, without the lock
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None


class OutputError(AdcliError):
    """An output file that cannot or must not be written."""


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _mode_of(*paths: str) -> int:
    """The permissions of the first of ``paths`` that is a file, else the usual ones."""
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    return _default_mode()


def stage(path: str, write: Callable, binary: bool = False, like: tuple = ()) -> str:
    """Write a temporary file next to ``path`` through ``write(file)`` and return its name.
    Its mode is ``path``'s if that exists, else that of the first file in ``like``, else the
    usual (mkstemp's own is private)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".adcli-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, _mode_of(path, *like))
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            write(f)
    except OSError as exc:
        _unlink(tmp)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def publish(moves: list, force: bool = True) -> None:
    """Rename each staged ``(tmp, path)`` over its path, in order, holding the folder's lock.
    Without ``force``, a path that exists now (a file made there while adcli ran, after
    ``check_writable`` found none) is not replaced: OutputError, and nothing is published."""
    claimed: list = []  # empty placeholders made here, until a staged file replaces each
    try:
        with _locked(os.path.dirname(os.path.abspath(moves[0][1]))):
            if not force:
                for _, path in moves:
                    _claim(path)
                    claimed.append(path)
            for tmp, path in moves:
                os.replace(tmp, path)
                if path in claimed:
                    claimed.remove(path)
    except OutputError:
        for path in claimed:
            _unlink(path)
        raise
    except OSError as exc:
        for path in claimed:
            _unlink(path)
        path = next((p for t, p in moves if os.path.exists(t)), moves[0][1])
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        for tmp, _ in moves:
            _unlink(tmp)


def _claim(path: str) -> None:
    """Create ``path`` empty, atomically, failing if anything is there (O_EXCL): the rename
    that follows replaces only this placeholder, never a file someone else made meanwhile."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise OutputError(f"{path} was created while adcli ran; it is left as it is: pass --force to overwrite it") \
            from None


@contextlib.contextmanager
def _locked(folder: str):
    """An exclusive lock on ``folder`` (flock on the directory itself: no lock file is left)."""
    if fcntl is None:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def atomic_write(path: str, write: Callable, binary: bool = False, force: bool = True) -> None:
    """Write ``path`` through ``write(file)`` atomically (stage, then publish; without
    ``force``, never over a file that exists by then)."""
    publish([(stage(path, write, binary), path)], force)


def write_text(path: str, text: str, force: bool = True) -> None:
    atomic_write(path, lambda f: f.write(text), force=force)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the same inode when both exist, else the same real path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(os.path.abspath(a)) == os.path.realpath(os.path.abspath(b))


def refuse_inputs(output: str, inputs: list) -> None:
    """Refuse, before any work and even with ``--force``, to write ``output`` over one of a
    command's ``inputs`` (a profile, its sample file, a script, a rules file): writing the
    result would destroy what it was made from."""
    for path in inputs:
        if path and output and same_file(output, path):
            raise OutputError(f"refusing to write {output}: it is an input of this command ({path}); "
                              "choose another output path")


def check_writable(path: str, force: bool = False, what: str = "") -> None:
    """Fail before any work is done if ``path`` cannot be written, or exists and ``force`` is
    not given."""
    if not path:
        raise OutputError("the output path is empty")
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if path.endswith(os.sep) or os.path.isdir(path):
        raise OutputError(f"cannot write {path}: it is a folder")
    if os.path.lexists(path):
        if not os.path.isfile(path):
            kind = "a dangling link" if os.path.islink(path) else "not a regular file"
            raise OutputError(f"cannot write {path}: it is {kind}")
        if not force:
            raise OutputError(f"{path} exists; pass --force to overwrite it{what}")
    if not os.path.isdir(folder):
        what_is = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise OutputError(f"cannot write {path}: {folder} {what_is}")
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
