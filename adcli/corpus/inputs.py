"""A program's inputs: the files it read when it was profiled (adcli/cli_probe.py), each stored with its
size, modification time and SHA-256. A rerun skips a program stored under the same key (its
source, options, adcli's version) only if every input is as it was: same size and time (the
quick test, as git's index does), else the same content (a file touched but not changed is
still the same input).

The store is data: the paths it names are only looked at (``os.stat``) and read to be hashed,
and only regular files (a FIFO or a device named by a crafted store would block or never end);
a path that is not one counts as changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

_CHUNK = 1 << 20


def read_manifest(path: str) -> list | None:
    """The paths a probe wrote to ``path`` (None: no manifest, or not one: inputs unknown)."""
    try:
        with open(path, encoding="utf-8") as f:
            paths = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return None
    return paths


def _sha256(path: str) -> str | None:
    """The content's digest of a regular file (None: not one, or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        with os.fdopen(fd, "rb", closefd=False) as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def fingerprint(paths: list) -> list:
    """``[(path, size, mtime_ns, sha256)]`` of the regular files among ``paths``."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        digest = _sha256(path)
        if digest is not None:
            out.append((path, st.st_size, st.st_mtime_ns, digest))
    return out


class Inputs:
    """Whether stored inputs are unchanged, each file looked at once per run (many programs
    share a module or a data file)."""

    def __init__(self) -> None:
        self._digests: dict = {}

    def changed(self, rows: list) -> str | None:
        """The first of ``rows`` (``(path, size, mtime_ns, sha256)``) that changed, or None."""
        for path, size, mtime_ns, digest in rows:
            try:
                st = os.stat(path) if isinstance(path, str) else None
            except OSError:
                st = None
            if st is None or not stat.S_ISREG(st.st_mode):
                return path
            if st.st_size == size and st.st_mtime_ns == mtime_ns:
                continue
            if path not in self._digests:
                self._digests[path] = _sha256(path)
            if self._digests[path] != digest:
                return path
        return None
