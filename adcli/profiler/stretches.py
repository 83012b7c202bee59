"""The profiled reverse pass, stretch by stretch: which call each tape node, each stretch of
the reverse pass and each array is charged to (the bookkeeping of profiler/session.py).

The session keeps the tape in stretches, each recorded by one call (a mark: its first index and
the CallNode). ``stretches_of`` turns the marks into (first, end, call) stretches and charges
each call with the arrays its nodes made; ``reverse`` runs engine.tape.backward's loop over them,
reading the clock once per stretch and charging the stretch's time and the cotangent arrays it
made to its call.
"""

from __future__ import annotations

import sys
import time

import numpy as np

ndarray = np.ndarray
_perf = time.perf_counter
_refcount = sys.getrefcount


def stretches_of(nodes: list, marks: list) -> list:
    """The marks as (first, end, CallNode) stretches of the tape, ``end`` exclusive; each
    stretch's call is charged with the arrays its nodes made (``core.output_of``; views and
    numbers allocate nothing the advisor counts)."""
    ends = [k for k, _ in marks[1:]]
    ends.append(len(nodes))
    out = []
    for (lo, top), hi in zip(marks, ends):
        out.append((lo, hi, top))
        for node in nodes[lo:hi]:  # a slice: faster per node than indexing
            at = node[0].output_at
            if at is not None:
                v = node[at]
                if type(v) is ndarray and v.base is None:
                    top.fwd_allocs += 1
                    top.fwd_bytes += v.nbytes
    return out


def reverse(nodes: list, acc, start: int, stretches: list, root) -> None:
    """engine.tape.backward from ``start``, one stretch at a time: each stretch's time goes to
    its call's ``rev``; each cotangent array the pass made, counted once (views, cotangents
    passed on unchanged and in-place sums make none), to the call that recorded the value; the
    gradients of the inputs to the top-level call above the first stretch (``root`` without one)."""
    grads = acc.grads
    # The cotangent arrays counted so far that a slot may hand back again (a pullback passes its
    # cotangent on unchanged: add's does), by id, held so that an id is not reused while it is
    # here; each is let go once nothing but this loop holds it (see _HELD).
    known: dict = {}
    # One loop over the nodes, from start down to the first stretch's first node; crossing into
    # the stretch below reads the clock once and charges the time since the last reading.
    k = len(stretches) - 1
    while k >= 0 and stretches[k][0] > start:
        k -= 1
    if k >= 0:
        lo, _, owner = stretches[k]
        first = stretches[0][0]
        t_prev = _perf()
        for i in range(start, first - 1, -1):
            if i < lo:  # into the stretch below
                t = _perf()
                owner.rev += t - t_prev
                t_prev = t
                while i < lo:  # (every stretch has nodes: a mark is made only for new ones)
                    k -= 1
                    lo, _, owner = stretches[k]
            g = grads[i]
            if g is None:
                continue
            grads[i] = None
            node = nodes[i]
            nodes[i] = False  # as engine.tape.backward: its kept values are freed as the pass goes
            if type(g) is ndarray and g.base is None:
                key = id(g)
                if key not in known:
                    known[key] = g
                    if g.size:
                        owner.rev_allocs += 1
                        owner.rev_bytes += g.nbytes
                node[0](node, g, acc)
                if _refcount(g) <= _HELD:  # no slot holds it: it cannot come back
                    del known[key]
            else:
                node[0](node, g, acc)
        owner.rev += _perf() - t_prev
    outermost = _outermost(stretches[0][2]) if stretches else root
    for i in range(min(stretches[0][0] if stretches else start + 1, start + 1)):  # the gradients
        g = grads[i]
        if type(g) is ndarray and g.base is None and id(g) not in known and g.size:
            known[id(g)] = g
            outermost.rev_allocs += 1
            outermost.rev_bytes += g.nbytes


def _outermost(node):
    """The top-level call above ``node`` (the function handed to ``grad``, when it is the
    user's): the gradients of the inputs are charged to it."""
    while node.parent is not None and node.parent.parent is not None:
        node = node.parent
    return node


def _held() -> int:
    """The reference count of a cotangent array that only the reverse loop holds: its local
    name, its ``known`` entry and ``sys.getrefcount``'s own argument (probed, not assumed)."""
    known: dict = {}
    g = np.empty(1)
    known[id(g)] = g
    return _refcount(g)


_HELD = _held()
