"""autograd.scipy read as scipy (looked up when used)."""

import scipy as _sp

from . import integrate, linalg, signal, special, stats  # noqa: F401


def __getattr__(name):
    return getattr(_sp, name)
