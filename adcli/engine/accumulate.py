"""Gradient accumulation for the reverse pass, adding in place into buffers the engine owns.

A cotangent handed back by a pullback may be shared (``add``'s pullback hands the same ``g``
to both parents) or read-only (a ``broadcast_to`` view), so the first cotangent for a value is
stored as is; the first sum makes a fresh array, which the accumulator then *owns* and adds
later shares into in place. Rules that accumulate in place themselves (indexing: ``x[i]`` in a
loop must not allocate a full-size gradient per element) ask for an owned ``buffer``.
"""

from __future__ import annotations

import numpy as np

from ..errors import RuleError

ndarray = np.ndarray


class Accumulator:
    __slots__ = ("grads", "owned")

    def __init__(self, n: int) -> None:
        self.grads: list = [None] * n
        self.owned: set = set()

    def add(self, p: int, c) -> None:
        """Add cotangent ``c`` into value ``p``'s slot."""
        grads = self.grads
        old = grads[p]
        if old is None:
            grads[p] = c
        elif p in self.owned:
            if type(c) is ndarray and c.shape != old.shape:
                _shape_mismatch(old, c)
            old += c
        else:
            new = old + c
            if type(new) is ndarray:
                if type(old) is ndarray and new.shape != old.shape:
                    _shape_mismatch(old, c)
                self.owned.add(p)
            grads[p] = new

    def buffer(self, p: int, shape: tuple, dtype) -> np.ndarray:
        """An owned, writable gradient array for value ``p`` (zeros if nothing flowed yet)."""
        grads = self.grads
        old = grads[p]
        if old is None:
            buf = np.zeros(shape, dtype)
        elif p in self.owned:
            return old
        else:
            buf = np.array(np.broadcast_to(old, shape), dtype=dtype)
        grads[p] = buf
        self.owned.add(p)
        return buf

    def take(self, p: int):
        """Remove and return the cotangent of ``p`` with ownership (for pullbacks that
        pass a buffer on, like assignment's)."""
        g = self.grads[p]
        self.grads[p] = None
        owned = p in self.owned
        if owned:
            self.owned.discard(p)
        return g, owned

    def give(self, p: int, buf) -> None:
        """Store an owned buffer for ``p``, or add it if something is there already."""
        if self.grads[p] is None:
            self.grads[p] = buf
            if type(buf) is ndarray:
                self.owned.add(p)
        else:
            self.add(p, buf)


def _shape_mismatch(old, c):
    raise RuleError(
        f"a cotangent of shape {np.shape(c)} was added to a gradient of shape {np.shape(old)}: "
        "a rule returned the wrong shape (the engine never broadcasts a gradient)"
    )
