"""autograd.scipy.stats.poisson (a module in autograd) read as scipy.stats.poisson's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.poisson, name)
