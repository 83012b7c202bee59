"""autograd.scipy.stats.chi2 (a module in autograd) read as scipy.stats.chi2's methods."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats.chi2, name)
