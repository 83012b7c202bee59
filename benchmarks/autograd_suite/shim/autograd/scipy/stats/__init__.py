"""autograd.scipy.stats read as scipy.stats: ``stats.norm.logpdf`` is scipy.stats.norm's method."""

import scipy.stats as _stats


def __getattr__(name):
    return getattr(_stats, name)
