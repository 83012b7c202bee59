"""autograd.scipy.stats.multivariate_normal (a module in autograd) read as scipy.stats.multivariate_normal's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.multivariate_normal, name)
