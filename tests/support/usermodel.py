"""A user's module for the rule-dispatch tests: plain NumPy functions."""

import numpy as np


def energy(x, s):
    """s * sum(x^2) + sum(sin(x)): several primitives when derived."""
    return s * np.sum(x ** 2) + np.sum(np.sin(x))


def model(x, s):
    """Calls energy by module-level name, as most code does."""
    return energy(x, s) * 2.0
