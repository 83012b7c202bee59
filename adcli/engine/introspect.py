"""The tape as the profiler reads it: public questions about a recorded node, so that no tool
outside the engine reads a node's tuple or a pullback's private name.

A node is what :func:`adcli.engine.core.record` puts on the tape; the questions here are what
a cost model needs of it (profiler/decompose.py, profiler/stretches.py).
"""

from __future__ import annotations

from .core import pb_binary, pb_passes
from .mutation import _pb_setitem


def carried(node) -> tuple:
    """The parents whose edge to ``node`` is no step of a chain of dependence: both operands of
    an addition or a subtraction (the accumulator of a sum), the earlier version of an array
    written into. What tells a recurrence (each step needs the last) from a map or a reduction."""
    kind = node[0]
    if kind is pb_passes or (kind is pb_binary and node[1].name in ("add", "subtract")):
        return node[2]
    if kind is _pb_setitem:
        return (node[1],)
    return ()
