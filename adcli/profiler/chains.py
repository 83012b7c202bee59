"""Chains of dependence in a call's tape: what tells a recurrence (a time loop, a stack of
layers: each step needs the last) from a map or a reduction, whose runs of scalar operations a
rewritten forward pass can vectorise (docs/advisor.md § What is estimated).

profiler.decompose measures a call's critical path while it times the reverse pass; the
advisor asks :func:`recurrent` of the numbers a profile records.
"""

from __future__ import annotations

from ..engine.core import pb_binary, pb_passes
from ..engine.mutation import _pb_setitem


def carried(node) -> tuple:
    """The parents whose edge to ``node`` is no step of a chain: both operands of an addition or
    a subtraction (the accumulator of a sum), the earlier version of an array written into."""
    kind = node[0]
    if kind is pb_passes or (kind is pb_binary and node[1].name in ("add", "subtract")):
        return node[2]
    if kind is _pb_setitem:
        return (node[1],)
    return ()



def recurrent(nodes: int | None, operations: int | None, chain: int | None) -> bool:
    """Whether a call's operations form a recurrence (a time loop, a stack of layers, a
    Horner scheme: the critical path through its tape repeats operations, each step needing the
    last) rather than a map or a reduction (whose chains are as long as one element's work):
    only the latter's runs of scalar operations can become one vectorised call."""
    return bool(nodes and operations and chain) and chain > operations
