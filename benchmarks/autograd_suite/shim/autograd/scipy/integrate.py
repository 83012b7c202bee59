"""autograd.scipy.integrate read as scipy.integrate (looked up when used)."""

import scipy.integrate as _mod


def __getattr__(name):
    return getattr(_mod, name)
