"""autograd.scipy.special read as scipy.special (looked up when used)."""

import scipy.special as _mod


def __getattr__(name):
    return getattr(_mod, name)
