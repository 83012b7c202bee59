"""autograd.numpy.linalg read as numpy.linalg (looked up when used), plus the two helpers
autograd's module defines and its tests call: ``T`` (swap the last two axes) and ``_dot``
(batched matrix product), written here as NumPy calls."""

import numpy as _np
import numpy.linalg as _la


def __getattr__(name):
    return getattr(_la, name)


def T(x):
    return _np.swapaxes(x, -1, -2)


def _dot(a, b):
    return _np.einsum("...ij,...jk->...ik", a, b)
