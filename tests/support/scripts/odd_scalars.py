"""Gradients of a function called with NumPy scalars JSON cannot hold (complex, longdouble,
datetime64, void): their samples are described, never saved, and the profile is not lost."""
import numpy as np

import adcli


def f(x, c):
    return np.sum(np.sin(x))


if __name__ == "__main__":
    for c in (np.complex128(1j), np.longdouble(2), np.datetime64("2020-01-01"), np.void(b"ab")):
        adcli.grad(lambda x: f(x, c))(np.ones(3))
    print("done")
