import numpy as np

from adcli import grad


def f(x):
    print("Running simulation...")
    return np.sum(np.sin(x) ** 2)


g = grad(f)
for _ in range(3):
    g(np.ones(5))
