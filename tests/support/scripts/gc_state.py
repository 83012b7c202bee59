"""Records whether the garbage collector runs while a profiled gradient is computed."""
import gc
import sys

import numpy as np

import adcli

seen = []


def f(x):
    seen.append(gc.isenabled())
    return np.sum(np.sin(x))


adcli.grad(f)(np.ones(3))
seen.append(gc.isenabled())
# the profiler's output is not ours to print into; report through the exit status
sys.exit(0 if seen == [False, True] else 3)
