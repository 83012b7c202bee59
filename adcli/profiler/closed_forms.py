"""The profiler's side of the closed forms the rules declare: what a hand-written pullback of a
node still does where the engine's generic one does more, for the nodes whose closed form is not
"the forward's data work" (np.linalg.solve's and np.linalg.cholesky's, declared beside their rules
in engine/rules/linalg.py, read through engine.introspect.closed_form), timed on this module's
clock (profiler.decompose, docs/advisor.md § What is estimated).

The engine says what to run and how the times combine; the clock and its repeats are the cost
model's, here: a busy machine only ever adds time, so each is the fastest of a few runs.
"""

from __future__ import annotations

import time

from ..engine import introspect

_perf = time.perf_counter


def closed_form_share(node, g, work: float | None) -> float | None:
    """The share of ``node``'s pullback a hand-written rule still does, in [0, 1], where its rule
    declared a closed form (None: none declared); ``g`` its cotangent, ``work`` its VJPs' measured
    seconds (None: not measured, a node no primitive recorded)."""
    share = introspect.closed_form(node)
    return None if share is None else share(g, work, fastest)


def fastest(fn, runs: int = 3) -> float:
    """Seconds of the fastest of ``runs`` calls of ``fn()``: a busy machine only ever adds time."""
    best = float("inf")
    for _ in range(runs):
        t0 = _perf()
        fn()
        best = min(best, _perf() - t0)
    return best
