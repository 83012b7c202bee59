"""A traced recursion 600 deep: runs under plain adcli, and must run under the profiler too."""
import numpy as np

import adcli


def f(x, n):
    return x if n == 0 else f(np.sin(x), n - 1)


def loss(x):
    return np.sum(f(x, 600))


g = adcli.grad(loss)(np.linspace(0.1, 1.0, 3))
print("OK", g.shape)
