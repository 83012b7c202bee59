"""autograd.scipy.stats.gamma (a module in autograd) read as scipy.stats.gamma's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.gamma, name)
