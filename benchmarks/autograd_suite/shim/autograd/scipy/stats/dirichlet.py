"""autograd.scipy.stats.dirichlet (a module in autograd) read as scipy.stats.dirichlet's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.dirichlet, name)
