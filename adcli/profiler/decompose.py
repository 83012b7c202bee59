"""What a derived rule's time is made of: the primal, the NumPy work of its pullbacks, and the
engine's machinery (docs/advisor.md § What is measured).

A replay measures the primal P and the derived forward + reverse D of one call. This module
runs the same reverse pass once more with every pullback timed (``_Timed``, an engine session
installed only for that run), which gives

* ``pullback_s`` B: the pullbacks' own time (their NumPy work, and adding their shares into
  the gradients), less the timer's overhead;
* ``vector_pullback_s``: the part of B that scales with data: each pullback's NumPy work above
  what the same VJP expressions cost on one-element values of the same ranks (``_tiny``, timed
  once per operation and ranks; ``Calibration.small_work_s`` where they cannot run on such
  values). A pullback on a scalar is all fixed cost, which a vectorised hand-written rule does not
  pay per element; one on a large array is all data work, which any rule must do. Each VJP's own
  fixed cost counts, not a generic one: a ``dot`` or an ``outer`` costs several times what a
  ``sin`` costs before it touches its data;
* ``lean_pullback_s``: the part of that data work a closed-form pullback still has to do. An
  elementwise operation or a memory-bound reduction (sum, mean, var, max) reads and writes
  arrays of its output's size once; its reverse needs no more per differentiated argument, but
  a generic VJP often does more (divide's ``-g * ans / y``, a tie mask for maximum, var's mean
  computed again, broadcasts summed back). Each such node's data work is scaled down to its
  forward's data work per differentiated argument when its VJPs take more (both timed warm,
  one after the other, above their cost on one-element values); a ``np.linalg.solve`` with one
  right-hand side keeps its pullback's time above its forward's (the factorization a rule
  reuses, ``_lean_solve``); other nodes (matmul, linear algebra, indexing) keep theirs: their
  reverse is work any rule must do;
* ``closed_fixed_s``: the per-call cost a closed-form pullback pays on top of that data work:
  for each distinct operation once, an operation being a kind of node and its output's shape
  (a vectorised rule does not repeat a loop's per tape node; other shapes are other calls), the
  least of its VJPs' fixed cost and one NumPy call per differentiated argument
  (``Calibration.call_s``: an expert's reverse of an elementwise operation or a reduction is one
  expression, where a generic VJP can take several, e.g. logaddexp's or mean's);
* ``nodes`` and ``operations``: tape nodes, and distinct operations (kinds of pullback and
  output shapes), per call.

The engine's machinery is then M = D - P - B: recording nodes, dispatch, the reverse loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..engine import hooks
from ..engine.core import BINARY_KINDS, Primitive, binary_parents, pb_general, pb_joint, pb_unary
from ..engine.grad import vjp
from ..engine.hooks import Session
from ..engine.rules_linalg import CHOLESKY, _pb_solve, _solve_da_of, _solve_gb, solve
from ..engine.sums import unbroadcast
from ..engine.tape import node_parents
from ..engine.triangular import scipy_linalg, triangle
from ..measure import stable_median
from .chains import carried, recurrent

_perf = time.perf_counter


class _Timed(Session):
    """A session that times each pullback of one reverse pass (and nothing else): the whole node
    (``times``), and its NumPy work alone (``work``: the primitive's VJP expressions, run twice
    more before the node, the faster run, without the engine's accumulation; the node's time
    for other nodes)."""

    def __init__(self) -> None:
        self.times: list = []
        self.work: list = []
        self.fixed: list = []  # each node's VJP expressions on one-element values (None: not known)
        self.lean: list = []  # each node's share of its data work a closed-form pullback needs (see _lean)
        self.kinds: set = set()
        self.ops: list = []  # each node's ((kind, output shape), differentiated arguments)
        self.chain = 0  # the longest run of nodes each computed from the last (see _Timed.backward)
        self._tiny: dict = {}
        self._tiny_fwd: dict = {}

    def backward(self, tape, acc, start: int) -> None:
        nodes, grads, times, work, kinds = tape.nodes, acc.grads, self.times, self.work, self.kinds
        # The critical path: each node's longest chain of dependent nodes to the output, complete
        # when the node is reached (its consumers come later on the tape, so were visited first).
        # A time loop's steps each need the last (a chain as long as the loop); a map's elements
        # do not (chains as long as one element's work): only a map's forward can be vectorised.
        # Additions into an accumulator and writes into an array's next version add no step (a
        # sum over a loop is np.sum; y[i] = f(x[i]) in a loop is a map).
        height = {start: 1}
        for i in range(start, -1, -1):  # engine.tape.backward, with a timer around each pullback
            g = grads[i]
            if g is None:
                continue
            node = nodes[i]
            if node is None:
                continue
            grads[i] = None
            h = height.pop(i, 1)
            if h > self.chain:
                self.chain = h
            passed = carried(node)
            for p in node_parents(node):
                hp = h if p in passed else h + 1
                if height.get(p, 0) < hp:
                    height[p] = hp
            w = _work(node, g)
            if w is not None:  # the faster of two runs: the first may find the VJP's data out of the caches
                w = min(w, _work(node, g))
            fixed = None if w is None else self._fixed(node, g)
            self.fixed.append(fixed)
            self.lean.append(_lean_solve(node, g) if node[0] is _pb_solve else _lean_cholesky(node, w)
                             if _is_cholesky(node) else 1.0 if w is None else self._lean(node, g, w))
            t0 = _perf()
            node[0](node, g, acc)
            t = _perf() - t0
            times.append(t)
            work.append(t if w is None else w)
            # an operation: its kind and its output's shape (a loop repeats one; straight-line code
            # applies a kind to other shapes, each a call of its own in a closed form too)
            op = (_kind(node), np.shape(g))
            kinds.add(op)
            self.ops.append((op, 1 if w is None else _differentiated(node)))

    def _fixed(self, node, g) -> float | None:
        """The node's VJP expressions timed on one-element values of the same ranks: their fixed
        cost (once per operation and ranks; the median of a few runs)."""
        key = (_kind(node), _ranks(node, g))
        if key not in self._tiny:
            tiny = _shrunk(node, g)
            try:
                with np.errstate(all="ignore"):
                    self._tiny[key] = None if tiny is None else float(np.median([_work(*tiny) for _ in range(5)]))
            except Exception:  # noqa: BLE001 - a VJP that needs its real shapes (reshape, an axis): not known
                self._tiny[key] = None
        return self._tiny[key]

    def _lean(self, node, g, work: float) -> float:
        """The share of an elementwise or memory-bound reduction node's VJP data work that its
        forward's data work per differentiated argument covers (1.0 for other nodes): both
        timed warm (``work``: the VJPs' time, the faster of two runs), above their one-element cost."""
        fwd = _forward(node)
        if fwd is None:
            return 1.0
        key = (_kind(node), _ranks(node, g))
        try:
            with np.errstate(all="ignore"):
                vjps = work - (self._fixed(node, g) or 0.0)
                if key not in self._tiny_fwd:
                    tiny = _shrunk(node, g)
                    self._tiny_fwd[key] = min(_timed_forward(_forward(tiny[0])) for _ in range(3))
                forward = min(_timed_forward(fwd) for _ in range(2)) - self._tiny_fwd[key]
        except Exception:  # noqa: BLE001 - values the forward no longer takes (mutated since): not known
            return 1.0
        if vjps <= 0.0:
            return 1.0
        return min(max(forward, 0.0) * _differentiated(node) / vjps, 1.0)


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


def _forward(node):
    """(the primitive's forward, its values, its keywords) for an elementwise or lean reduction
    node, else None."""
    kind = node[0]
    if kind is pb_unary:
        return node[1].fwd, (node[4],), {}
    if kind in BINARY_KINDS and node[1].name not in _GENERALISED:
        return node[1].fwd, (node[4], node[5]), {}
    if kind is pb_general and node[1].name in _LEAN_REDUCTIONS:
        return node[1].fwd, node[4], node[5]
    return None


def _fastest(fn, runs: int = 3) -> float:
    """Seconds of the fastest of ``runs`` calls of ``fn()``: a busy machine only ever adds time."""
    best = float("inf")
    for _ in range(runs):
        t0 = _perf()
        fn()
        best = min(best, _perf() - t0)
    return best


def _timed_forward(fwd) -> float:
    fn, vals, kwargs = fwd
    t0 = _perf()
    fn(*vals, **kwargs)
    return _perf() - t0


def _differentiated(node) -> int:
    kind = node[0]
    return 1 if kind is pb_unary else len(binary_parents(node)) if kind in BINARY_KINDS else len(node[2])


def _ranks(node, g) -> tuple:
    return tuple(np.ndim(v) for v in (g, *_values(node)))


def _values(node) -> tuple:
    """The arrays and numbers a primitive's VJPs read: (ans, *operands)."""
    kind = node[0]
    if kind is pb_unary:
        return node[3], node[4]
    if kind in BINARY_KINDS:
        return node[3], node[4], node[5]
    return (node[3], *node[4])


def _one(v):
    """``v`` with every axis cut to length 1 (same rank, dtype and type), or v itself."""
    if type(v) is np.ndarray and v.ndim:
        return np.ascontiguousarray(v[(slice(0, 1),) * v.ndim])
    return v


def _shrunk(node, g):
    """(node, g) with every array cut to one element per axis, or None for other nodes."""
    kind = node[0]
    if kind is pb_unary:
        return (kind, node[1], node[2], _one(node[3]), _one(node[4])), _one(g)
    if kind in BINARY_KINDS:
        return (kind, node[1], node[2], _one(node[3]), _one(node[4]), _one(node[5])), _one(g)
    if kind is pb_general:
        return (kind, node[1], node[2], _one(node[3]), tuple(_one(v) for v in node[4]), node[5]), _one(g)
    return None


def _work(node, g) -> float | None:
    """Seconds of the NumPy work of a primitive's node (its VJPs, and the sums that undo
    broadcasting), run on their own; None for other nodes (rules, indexing, mutation)."""
    kind = node[0]
    if kind is pb_unary:
        _, prim, _, ans, x = node
        t0 = _perf()
        prim.vjps[0](g, ans, x)
        return _perf() - t0
    if kind in BINARY_KINDS:
        _, prim, parents, ans, x, y = node
        t0 = _perf()
        if kind is pb_joint and None not in parents:  # both cotangents from one call, as pb_joint
            cx, cy = prim.joint(g, ans, x, y)
            unbroadcast(cx, x)
            unbroadcast(cy, y)
            return _perf() - t0
        for argnum, _ in binary_parents(node):
            vjp = prim.vjps[argnum]
            if vjp is not None:
                unbroadcast(vjp(g, ans, x, y), y if argnum else x)
        return _perf() - t0
    if kind is pb_general:
        _, prim, parents, ans, vals, kwargs = node
        t0 = _perf()
        for argnum, _ in parents:
            vjp = prim.vjps[argnum]
            if vjp is not None:
                vjp(g, ans, *vals, **kwargs)
        return _perf() - t0
    return None


def _kind(node):
    """A node's operation: its pullback, and the primitive (a ufunc's rule) when it names one."""
    return (node[0], node[1]) if len(node) > 1 and isinstance(node[1], Primitive) else node[0]


def _timed_run(grad, args) -> _Timed:
    timed = _Timed()
    previous = hooks.current()
    hooks.install(timed)
    try:
        grad(*args)
    finally:
        if previous is None:
            hooks.uninstall()
        else:
            hooks.install(previous)
    return timed


@dataclass(frozen=True)
class Calibration:
    """This machine's constants, measured once per process."""

    timer_s: float  # the overhead of timing one pullback
    small_pullback_s: float  # a pullback's time on one-element values: all fixed cost
    rule_call_s: float  # what the engine adds to a call served by one rule: one node, one vjp
    small_work_s: float = 0.0  # a VJP expression's time on one-element values: NumPy's per-call cost
    call_s: float = 0.0  # one NumPy ufunc call on one-element arrays (a closed form's per-operation cost)


@lru_cache(maxsize=1)
def calibration() -> Calibration:
    def noop(node, g, acc):
        pass

    samples = []
    for _ in range(2000):
        t0 = _perf()
        noop(None, None, None)
        samples.append(_perf() - t0)
    timer = float(np.median(samples))
    x = np.array([0.5])
    scalar = vjp(lambda v: np.sum(np.sin(v) * v + np.exp(v) - v * 2.0), 0, 1.0)
    runs = [_timed_run(scalar, (x,)) for _ in range(50)]
    small = float(np.median([t for run in runs for t in run.times])) - timer
    small_work = float(np.median([t for run in runs for t in run.work])) - timer
    one = vjp(np.negative, 0, np.ones(1))
    served, _ = stable_median(lambda: one(x), 0.05)
    plain, _ = stable_median(lambda: np.negative(x), 0.05)
    y = np.array([1.5])
    call, _ = stable_median(lambda: np.multiply(x, y), 0.05)
    return Calibration(timer, max(small, 0.0), max(served - plain, 0.0), max(small_work, 0.0), call)


@dataclass
class Decomposition:
    pullback_s: float
    vector_pullback_s: float
    nodes: int
    operations: int
    chain: int | None = None  # the longest chain of nodes each computed from the last (the critical path)
    work_s: float | None = None  # the pullbacks' NumPy work alone (their VJP expressions)
    lean_pullback_s: float | None = None  # the part of vector_pullback_s a closed-form pullback needs
    closed_fixed_s: float | None = None  # the per-call cost a closed-form pullback pays besides that


def decompose(grad, args, runs: int = 3, derived_s: float | None = None) -> Decomposition:
    """Time each pullback of ``grad(*args)`` (a vjp) ``runs`` times; keep the fastest run.

    With ``derived_s`` (the replay's own time of the same gradient), the seconds are put at the
    replay's pace: the plain gradient is timed between the runs too, and every part is scaled
    by ``derived_s`` over its fastest time (within 0.5-2x). A shared machine that slows down for
    the few milliseconds of these runs (one gp_lml profile in four had its pullbacks 1.4x the
    others') would otherwise make the pullbacks a larger share of the derived time than they are."""
    cal = calibration()
    plain, timed = [], []
    for _ in range(runs):
        t0 = _perf()
        grad(*args)
        plain.append(_perf() - t0)
        timed.append(_timed_run(grad, args))
    best = min(timed, key=lambda t: sum(t.times))
    pace = 1.0 if not derived_s else min(max(derived_s / max(min(plain), 1e-12), 0.5), 2.0)
    times = np.maximum(np.asarray(best.times, dtype=float) - cal.timer_s, 0.0)
    work = np.minimum(np.maximum(np.asarray(best.work, dtype=float) - cal.timer_s, 0.0), times)
    fixed = np.asarray([cal.small_work_s if f is None else max(f - cal.timer_s, 0.0) for f in best.fixed], dtype=float)
    vector = _per_operation(work - fixed, [op for op, _ in best.ops])
    # A closed-form pullback's per-call cost: each operation once, the least of its VJPs' fixed
    # cost and a NumPy call per argument; in a recurrence (recurrent(): steps that each need the
    # last), once per step, so once per node.
    closed: dict = {}
    serial = recurrent(len(best.times), len(best.kinds), best.chain)
    for k, ((op, differentiated), f) in enumerate(zip(best.ops, fixed)):
        key = k if serial else op
        closed[key] = min(closed.get(key, f), f, differentiated * cal.call_s)
    return Decomposition(pullback_s=float(times.sum()) * pace, vector_pullback_s=float(vector.sum()) * pace,
                         nodes=len(best.times), operations=len(best.kinds), chain=best.chain, work_s=float(work.sum()) * pace,
                         lean_pullback_s=float((vector * np.asarray(best.lean, dtype=float)).sum()) * pace,
                         closed_fixed_s=float(sum(closed.values())) * pace)


def _per_operation(excess: np.ndarray, ops: list) -> np.ndarray:
    """Each node's data work (VJP work less fixed cost, ``excess``): each operation's total is
    clipped at zero, then shared as its nodes' positive parts are (clipped node by node, the noise
    of 2000 scalar additions summed to 3.5 ms of "data work" on a loaded machine)."""
    out, nodes = np.maximum(excess, 0.0), {}
    for k, op in enumerate(ops):
        nodes.setdefault(op, []).append(k)
    for idx in map(np.asarray, nodes.values()):
        positive = float(out[idx].sum())
        out[idx] *= max(float(excess[idx].sum()), 0.0) / positive if positive > 0 else 0.0
    return out


def source_lines(func) -> int | None:
    """Lines of a Python function's body as compiled (None for a NumPy callable)."""
    code = getattr(getattr(func, "__adcli_original__", func), "__code__", None)
    if code is None:
        return None
    lines = [line for _, _, line in code.co_lines() if line is not None]
    return max(lines) - code.co_firstlineno + 1 if lines else None
