"""autograd.scipy.stats.beta (a module in autograd) read as scipy.stats.beta's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.beta, name)
