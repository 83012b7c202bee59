"""NumPy functions done by the engine's own kernels where NumPy's argument handling costs more
than the work (small arrays): the same values and memory layout as NumPy's. The rules use them
(engine/rules), and so do the rules adcli.synth writes."""

from __future__ import annotations

import numpy as np


def roll(x, shift, axis):
    """np.roll(x, shift, axis), for one integer shift along one axis of an array done as NumPy
    does it (np.empty_like and two slice copies: the same values and layout) without its
    argument handling, which costs several times the copies on small arrays (a 48x48 stencil's
    rolls, hundreds per step, take a fraction of the time this way: docs/engine.md § Measurements
    behind the code)."""
    if (type(x) is np.ndarray and type(axis) is int and isinstance(shift, (int, np.integer))
            and -x.ndim <= axis < x.ndim):
        axis %= x.ndim
        off = int(shift) % (x.shape[axis] or 1)
        out = np.empty_like(x)
        if off == 0:
            out[...] = x
            return out
        lead = (slice(None),) * axis
        out[lead + (slice(off, None),)] = x[lead + (slice(None, -off),)]
        out[lead + (slice(None, off),)] = x[lead + (slice(-off, None),)]
        return out
    return np.roll(x, shift, axis)
