"""autograd.scipy.stats.t (a module in autograd) read as scipy.stats.t's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.t, name)
