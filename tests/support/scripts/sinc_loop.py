"""A loop calling numpy.sinc (derived: where + sin + divide; autograd has a rule for it)."""
import numpy as np

import adcli


def f(x):
    total = 0.0
    for i in range(50):
        total = total + np.sum(np.sinc(x * (i + 1.0)))
    return total


adcli.grad(f)(np.linspace(0.1, 1.0, 64).reshape(8, 8))
