"""autograd.scipy.signal.convolve mapped to scipy.signal.convolve.

autograd's convolve also takes ``axes=`` and ``dot_axes=`` (convolve along some axes, contract
others), which SciPy's has no counterpart for: those raise ShimUnsupported."""

import scipy.signal as _signal

from .._adcli import AUTOGRAD_ONLY, ShimUnsupported


def __getattr__(name):
    return getattr(_signal, name)


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    if axes is not None or any(len(d) for d in dot_axes):
        raise ShimUnsupported(AUTOGRAD_ONLY, "autograd.scipy.signal.convolve(axes=, dot_axes=)")
    return _signal.convolve(A, B, mode=mode)
