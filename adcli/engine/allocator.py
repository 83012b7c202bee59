"""glibc's allocator, set once for the arrays gradients make (Linux).

A gradient makes arrays of its inputs' size (the forward values it keeps, the cotangents) and
frees them together at its end. glibc serves an allocation over its mmap threshold (128 KiB at
start) with fresh pages from the kernel, and gives the memory at the top of its heap back past its
trim threshold, so the next gradient pays again to fault in every page it writes. A process
reaches glibc's own ceiling for these thresholds (32 MiB and twice it) only once it has freed an
array of 32 MiB, which NumPy code of small and middle-sized arrays never does, and importing
PyTorch does on the way (which made every framework's numbers in benchmarks/bench.py look like
those of a process whose allocator keeps its memory). In a process without PyTorch, setting the
thresholds makes the gradients of small and middle-sized arrays markedly faster (simple_mlp's,
batchnorm_mlp's, and np.maximum(x, y)'s forward and pullback on 1000 x 1000 arrays with the
thresholds set through the environment; measured in December 2026: docs/engine.md § Measurements
behind the code).

So the first ``grad``/``value_and_grad``/``vjp`` a process makes sets both thresholds to that
ceiling (``mallopt``), as glibc's dynamic policy would after a 32 MiB free: memory a gradient
frees stays with the process, up to 64 MiB above its peak, for the next gradient. Left alone:
another C library than glibc, a process whose environment sets ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` (its own choice), and ``ADCLI_MALLOC=leave``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc's dynamic policy pairs with it
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # malloc.h

@functools.cache
def keep_gradient_memory() -> bool:
    """Set glibc's thresholds once per process (see the module docstring); whether they are set."""
    if not sys.platform.startswith("linux") or os.environ.get("ADCLI_MALLOC") == "leave":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: its mallopt parameters are glibc's
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
