"""autograd.scipy.linalg read as scipy.linalg (looked up when used)."""

import scipy.linalg as _mod


def __getattr__(name):
    return getattr(_mod, name)
