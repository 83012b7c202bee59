"""The profiled reverse pass, stretch by stretch: which call each tape node, each stretch of
the reverse pass and each array is charged to (the bookkeeping of profiler/session.py).

The session keeps the tape in stretches, each recorded by one call (a mark: its first index and
the CallNode). ``stretches_of`` turns the marks into (first, end, call) stretches and charges
each call with the arrays its nodes made; ``reverse`` runs engine.tape.backward with a visitor
that reads the clock once per stretch, charging the stretch's time and the cotangent arrays it
made to its call.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ..engine.introspect import allocated
from ..engine.tape import SumAccumulator, backward

ndarray = np.ndarray
_perf = time.perf_counter
_refcount = sys.getrefcount


def stretches_of(nodes: list, marks: list) -> list:
    """The marks as (first, end, CallNode) stretches of the tape, ``end`` exclusive; each
    stretch's call is charged with the arrays its nodes made (``introspect.allocated``; views and
    numbers allocate nothing the advisor counts)."""
    ends = [k for k, _ in marks[1:]]
    ends.append(len(nodes))
    out = []
    for (lo, top), hi in zip(marks, ends):
        out.append((lo, hi, top))
        count, size = allocated(nodes[lo:hi])  # a slice: faster per node than indexing
        top.fwd_allocs += count
        top.fwd_bytes += size
    return out


def reverse(nodes: list, acc, start: int, stretches: list, root) -> None:
    """engine.tape.backward from ``start``, one stretch at a time: each stretch's time goes to
    its call's ``rev``; each cotangent array the pass made, counted once (views, cotangents
    passed on unchanged and in-place sums make none), to the call that recorded the value; the
    gradients of the inputs to the top-level call above the first stretch (``root`` without one)."""
    grads = acc.grads
    # The cotangent arrays counted so far that a slot may hand back again (a pullback passes its
    # cotangent on unchanged: add's does), by id, held so that an id is not reused while it is
    # here; each is let go once nothing but the pass holds it (see _HELD).
    known: dict = {}
    k = len(stretches) - 1
    while k >= 0 and stretches[k][0] > start:
        k -= 1
    if k < 0:  # start is an input: no node recorded below it runs
        backward(nodes, acc, start)
    else:
        lo, _, owner = stretches[k]
        t_prev = _perf()

        # The visitor, a closure rather than a method: its state lives in cells, which it reads
        # faster than attributes, once per node of every gradient recorded in full. Reaching a
        # node of the stretch below reads the clock once and charges the time since the last
        # reading.
        def charge(i, node, g, pullback, acc):
            nonlocal k, lo, owner, t_prev
            if i < lo:  # into the stretch below
                t = _perf()
                owner.rev += t - t_prev
                t_prev = t
                while i < lo:  # (every stretch has nodes: a mark is made only for new ones)
                    k -= 1
                    lo, _, owner = stretches[k]
            if type(g) is ndarray and g.base is None:
                key = id(g)
                if key not in known:
                    known[key] = g
                    if g.size:
                        owner.rev_allocs += 1
                        owner.rev_bytes += g.nbytes
                pullback(node, g, acc)
                if _refcount(g) <= _HELD:  # no slot holds it: it cannot come back
                    del known[key]
            else:
                pullback(node, g, acc)

        backward(nodes, acc, start, charge)
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
    """The reference count of a cotangent array that only the reverse pass holds, as ``reverse``'s
    visitor sees it after its pullback: engine.tape.backward's local name, the visitor's
    argument, its ``known`` entry and ``sys.getrefcount``'s own argument (probed on a one-node
    tape through the same loop, not assumed)."""
    known: dict = {}
    counts: list = []

    def probe(i, node, g, pullback, acc):
        known[id(g)] = g
        pullback(node, g, acc)
        counts.append(_refcount(g))

    acc = SumAccumulator(2)
    acc.grads[1] = np.empty(1)
    backward([None, (lambda node, g, acc: None,)], acc, 1, probe)
    return counts[0]


_HELD = _held()
