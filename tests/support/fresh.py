"""Python code run in a fresh interpreter: for what a process does once (imports, its
allocator's settings) and must be seen from its start."""

from __future__ import annotations

import subprocess
import sys


def fresh_python(code: str, env: dict | None = None, timeout: float = 120) -> str:
    """``code`` run by this Python in a new process; its standard output (it must succeed)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout
