"""What a closed-form pullback does where the engine's generic one does more: the share of a
node's pullback work an expert's rule still does, for the nodes whose closed form is not
"the forward's data work" (profiler.decompose, docs/advisor.md § What is estimated)."""

from __future__ import annotations

import time

import numpy as np

from ..engine.core import pb_general
from ..engine.rules.linalg import CHOLESKY, _solve_da_of, _solve_gb, solve
from ..engine.triangular import scipy_linalg, triangle

_perf = time.perf_counter


def _lean_solve(node, g) -> float:
    """The share of a ``np.linalg.solve(a, b)`` node's pullback a rule that keeps the forward's
    factorization still does, for one right-hand side b: the pullback solves with a's transpose,
    which factorizes a again (LU, O(n^3)) before its O(n^2) triangular solves and outer product;
    a hand-written rule reuses the forward's factor (lu_factor, cho_factor, or the triangular
    factor it solved with), so the forward's time, nearly all factorization, comes off. 1.0 for
    several right-hand sides (their triangular solves are work too), for a triangular a (the
    pullback's solve is already a triangular one, ``triangular.triangle``) and when not
    measurable."""
    _, parents, ans, a, b = node
    if np.ndim(b) != 1 or type(a) is not np.ndarray or triangle(a) is not None:
        return 1.0
    def pull():
        gb = _solve_gb(g, a, b)
        if any(argnum == 0 for argnum, _ in parents):
            _solve_da_of(gb, ans, a, b)

    try:  # each the fastest of three runs: a run a busy machine preempted is not the call's cost
        pullback, forward = _fastest(pull), _fastest(lambda: solve(a, b))
    except Exception:  # noqa: BLE001 - values no longer solvable (mutated since): not known
        return 1.0
    return min(max(pullback - forward, 0.0) / pullback, 1.0) if pullback > 0 else 1.0


def _is_cholesky(node) -> bool:
    return node[0] is pb_general and node[1] is CHOLESKY


def _lean_cholesky(node, work: float | None) -> float:
    """The share of a ``np.linalg.cholesky(a)`` node's pullback a closed form needs. The generic
    pullback takes L^T G (BLAS's trmm) and the congruence L^-T Q L^-1 (LAPACK's sygst): about two
    n^3 flops, the result on one triangle; above 96 rows by halves, about two thirds of n^3
    (engine.triangular.congruence). A scalar objective that reaches a only through
    its factor's solves and log-determinant (a Gaussian likelihood, a Gaussian process's marginal
    likelihood: the uses of a Cholesky factor) has a closed form in K^-1, which LAPACK's potri
    computes from the forward's factor in two thirds of n^3 flops (scipy.linalg.lapack, as a GP
    rule is written: GPy's and scikit-learn's take K^-1 or K^-1 y from the factor). So that is what
    counts: potri and the copy of its triangle onto the other, timed here, over the pullback's own
    time (``work``). A function using its factor's entries otherwise is credited with more than a
    rule saves there; the gp workloads' predictions were 0.7x their measured savings before it."""
    _, _, _, L, _, kwargs = node
    if work is None or work <= 0 or type(L) is not np.ndarray or L.ndim != 2 or L.dtype.kind != "f":
        return 1.0
    try:
        potri = scipy_linalg()[1].get_lapack_funcs("potri", (L,))
        lower = not kwargs.get("upper")
        out: list = []

        def closed_form():
            half, info = potri(L, lower=lower)  # K^-1's triangle, from the factor
            out[:] = [half + (np.tril(half, -1) if lower else np.triu(half, 1)).T, info]

        closed = _fastest(closed_form)  # the fastest of three, as ``work`` is the faster of two
        inverse, info = out
    except Exception:  # noqa: BLE001 - values no longer factorable (mutated since): not known
        return 1.0
    if info != 0 or not np.all(np.isfinite(inverse)):
        return 1.0
    return min(max(closed, 0.0) / work, 1.0)


# Reductions whose forward and reverse are each a pass over the data: a closed-form pullback of
# them costs about what their forward costs (product and sorting-based ones are not in it).
_LEAN_REDUCTIONS = frozenset({"numpy.add.reduce", "numpy.mean", "numpy.var", "numpy.maximum.reduce",
                              "numpy.minimum.reduce"})


# ufuncs that are not elementwise (matmul and the other generalised ufuncs): their reverse is
# products any rule must compute
_GENERALISED = frozenset(f"numpy.{name}" for name in dir(np)
                         if isinstance(getattr(np, name), np.ufunc) and getattr(np, name).signature)


def _fastest(fn, runs: int = 3) -> float:
    """Seconds of the fastest of ``runs`` calls of ``fn()``: a busy machine only ever adds time."""
    best = float("inf")
    for _ in range(runs):
        t0 = _perf()
        fn()
        best = min(best, _perf() - t0)
    return best
