"""autograd.scipy.stats.norm (a module in autograd) read as scipy.stats.norm's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.norm, name)
