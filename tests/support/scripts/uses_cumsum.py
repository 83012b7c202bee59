import numpy as np

import adcli


def f(x):
    return np.sum(np.cumsum(x) ** 2)


adcli.grad(f)(np.linspace(0.1, 1.0, 50))
