import numpy as np

from adcli import grad

X = np.linspace(0.0, 1.0, 5)


def f(x):
    total = 0.0
    for v in x:
        total = total + np.sin(v) * X[0]
    return total


print("training ...")
for _ in range(3):
    grad(f)(X)
