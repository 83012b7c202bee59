"""autograd.numpy read as NumPy itself: every name is looked up on ``numpy`` when used.

Nothing is copied at import: adcli swaps a few ``numpy`` module attributes while it records
(``np.array`` of lists of traced values), and a lookup at use time sees what it installed.
``make_diagonal``, an autograd-only function, is our own composition of NumPy operations.
"""

import numpy as _np

from .._adcli import AUTOGRAD_ONLY, unsupported
from . import fft, linalg, random  # noqa: F401  (import autograd.numpy.linalg as ..., np.linalg.T)


def __getattr__(name):
    return getattr(_np, name)


def __dir__():
    return sorted(set(dir(_np)) | {"make_diagonal"})


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """autograd's make_diagonal for the one case autograd implements (offset=0, axis1=-1,
    axis2=-2): D's last axis spread onto the diagonal of two trailing axes."""
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError("Currently make_diagonal only supports offset=0, axis1=-1, axis2=-2")
    return D[..., :, None] * _np.eye(_np.shape(D)[-1])


metadata = unsupported(AUTOGRAD_ONLY, "autograd.numpy.metadata")
