"""A fit through scipy.integrate.odeint: its rule's reverse pass takes a gradient per step of the
adjoint (engine/rules/scipy/integrate.py), nested in the program's own gradients."""
import numpy as np
from scipy.integrate import odeint

import adcli


def field(y, t, k):
    return -k * y


def loss(k):
    ys = odeint(field, np.array([1.0, 0.5]), np.linspace(0.0, 1.0, 4), args=(k,))
    return np.sum(ys[-1] ** 2)


k = 0.3
for _ in range(3):
    k = k - 0.1 * adcli.grad(loss)(k)
print(f"k = {k:.4f}")
