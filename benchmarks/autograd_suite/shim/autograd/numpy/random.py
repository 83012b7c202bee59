"""autograd.numpy.random read as numpy.random (looked up when used)."""

import numpy.random as _npr


def __getattr__(name):
    return getattr(_npr, name)
