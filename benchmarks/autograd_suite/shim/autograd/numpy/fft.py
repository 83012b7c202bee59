"""autograd.numpy.fft read as numpy.fft (looked up when used)."""

import numpy.fft as _fft


def __getattr__(name):
    return getattr(_fft, name)
