"""glibc's allocator thresholds, set by the first gradient function a process makes
(adcli/engine/allocator.py), observed through mallinfo2: how many mmapped chunks an array of a
given size adds while it is live. Each case runs in a fresh process (the thresholds are
process-wide, and glibc's dynamic policy moves them as arrays are freed)."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from tests.support.fresh import fresh_python

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")

PROBE = textwrap.dedent(
    """
    import ctypes
    import numpy as np
    import adcli

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                         "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2

    def mmapped(nbytes):
        before = libc.mallinfo2().hblks
        a = np.ones(nbytes // 8)
        added = libc.mallinfo2().hblks - before
        del a
        return added

    first = mmapped(1 << 20)  # glibc's start: 128 KiB threshold (this free raises it to ~1 MiB)
    g = adcli.grad(lambda x: np.sum(x * x))
    print(first, mmapped(8 << 20), mmapped(64 << 20), float(g(np.ones(3))[0]))
    """
)


def _probe(**env) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "ADCLI_MALLOC"))}
    environ.update(env)
    return fresh_python(PROBE, env=environ).split()


def test_the_first_gradient_function_keeps_arrays_up_to_32_mib_in_the_heap():
    # before: a 1 MiB array is mmapped; after: 8 MiB comes from the heap (glibc's dynamic
    # threshold alone would have reached ~1 MiB), 64 MiB is still mmapped
    assert _probe() == ["1", "0", "1", "2.0"]


def test_adcli_malloc_leave_leaves_the_allocator_alone():
    assert _probe(ADCLI_MALLOC="leave") == ["1", "1", "1", "2.0"]


def test_a_threshold_set_in_the_environment_is_the_users_choice():
    assert _probe(MALLOC_MMAP_THRESHOLD_="65536") == ["1", "1", "1", "2.0"]
