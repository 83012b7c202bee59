"""A program with a known call structure: outer -> inner (x3) -> numpy.kron; two gradients."""
import numpy as np

import adcli


def inner(x):
    return np.sum(np.kron(np.sin(x), x))


def outer(x):
    total = 0.0
    for _ in range(3):
        total = total + inner(x)
    return total


if __name__ == "__main__":
    x = np.linspace(0.1, 1.0, 20).reshape(4, 5)
    for _ in range(2):
        adcli.grad(outer)(x)
    print("done")
