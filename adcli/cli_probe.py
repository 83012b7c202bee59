"""``python -m adcli.cli_probe MANIFEST ARGS...``: run ``adcli ARGS`` (a corpus worker's
``adcli profile``) and write to MANIFEST the files the program read (a JSON list of absolute paths):
its inputs, beside its source, in what decides whether a rerun may skip it (inputs.py).

An audit hook (PEP 578) sees every file the process opens: the program's data files, the
modules it imports, a test's conftest and configuration; every module loaded at the end adds
its source file (an import from a cached ``.pyc`` opens the ``.pyc`` only). Left out: what the
process wrote, Python's own files and installed packages (``sys.prefix``, site-packages:
their versions are not a program's input), adcli's (its version is in the key) and bytecode.
A process that ends by ``os._exit`` or a signal writes no manifest: its inputs are unknown, and
it is skipped by its key alone.
"""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig

_WRITES = os.O_WRONLY | os.O_RDWR


def _roots() -> tuple:
    """Folders whose files are not a program's inputs."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.abspath(__file__))}  # adcli's own package
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        roots.add(sysconfig.get_path(name))
    try:
        roots.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - a virtualenv's old site.py
        pass
    if site.ENABLE_USER_SITE and site.USER_SITE:
        roots.add(site.USER_SITE)
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


def inputs(read: set, written: set, modules) -> list:
    """The program's input files: those read and the modules' sources, less the ones written,
    the roots' and bytecode; existing regular files only, sorted."""
    roots = _roots()
    files = set(read)
    for m in modules:
        path = getattr(m, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            files.add(path)
    out = set()
    for path in files:
        real = os.path.realpath(path)
        if real in written or real.startswith(roots) or real.endswith((".pyc", ".pyo")) or \
                real.startswith(("/proc/", "/dev/", "/sys/")) or "__pycache__" in real:
            continue
        if os.path.isfile(real):
            out.add(real)
    return sorted(out)


def main(argv: list) -> None:
    manifest, args = argv[0], argv[1:]
    read: set = set()
    written: set = set()

    def hook(event: str, args: tuple) -> None:
        if event != "open":
            return
        path, _mode, flags = args
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):  # a file descriptor
            return
        path = os.path.abspath(path)
        (written if isinstance(flags, int) and flags & _WRITES else read).add(path)

    sys.addaudithook(hook)
    sys.argv = ["adcli", *args]
    from .__main__ import main as adcli

    try:
        adcli()
    finally:
        found = inputs(read, {os.path.realpath(p) for p in written}, list(sys.modules.values()))
        here = os.path.realpath(os.path.dirname(os.path.abspath(manifest))) + os.sep
        with open(manifest, "w", encoding="utf-8") as f:
            json.dump([p for p in found if not p.startswith(here)], f)


if __name__ == "__main__":
    main(sys.argv[1:])
