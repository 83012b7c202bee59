"""What a derived rule's time is made of: the primal, the NumPy work of its pullbacks, and the
engine's machinery (docs/advisor.md § What is measured).

A replay measures the primal P and the derived forward + reverse D of one call. This module
runs the same reverse pass once more with every pullback timed (``_Timed``, an engine session
installed only for that run, whose visitor engine.tape.backward calls around each pullback), which
gives

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
  one after the other, above their cost on one-element values; ``introspect.lean``); a node
  whose rule declares its closed form (``introspect.closed_form``) keeps the share it declares:
  a ``np.linalg.solve`` with one right-hand side its pullback's time above its forward's (the
  factorization a rule reuses), a ``np.linalg.cholesky`` the inverse from its factor
  (profiler/closed_forms.py); other nodes (matmul, linear algebra, indexing) keep theirs: their
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

from ..data.records import recurrent
from ..engine import hooks, introspect
from ..engine.grad import vjp
from ..engine.hooks import Session
from ..engine.tape import backward
from ..measure import stable_median
from .closed_forms import closed_form_share

_perf = time.perf_counter


class _Timed(Session):
    """A session that times each pullback of one reverse pass (and nothing else): the whole node
    (``times``), and its NumPy work alone (``work``: the primitive's VJP expressions, run twice
    more before the node, the faster run, without the engine's accumulation; the node's time
    for other nodes). The pass is engine.tape.backward's, with ``_visit`` around each pullback."""

    def __init__(self) -> None:
        self.times: list = []
        self.work: list = []
        self.fixed: list = []  # each node's VJP expressions on one-element values (None: not known)
        self.lean: list = []  # each node's share of its data work a closed-form pullback needs (see _lean)
        self.kinds: set = set()
        self.ops: list = []  # each node's ((operation, output shape), differentiated arguments)
        self.chain = 0  # the longest run of nodes each computed from the last (see _visit)
        # each node's forward operation re-run on its recorded values (``forwards``): the seconds,
        # and its cost on one-element values (None: a node whose forward cannot be re-run)
        self.forwards: bool = False
        self.fwd: list = []
        self.fwd_fixed: list = []
        self._tiny: dict = {}
        self._tiny_fwd: dict = {}
        self._height: dict = {}

    def backward(self, tape, acc, start: int) -> None:
        # The critical path: each node's longest chain of dependent nodes to the output, complete
        # when the node is reached (its consumers come later on the tape, so were visited first).
        # A time loop's steps each need the last (a chain as long as the loop); a map's elements
        # do not (chains as long as one element's work): only a map's forward can be vectorised.
        # Additions into an accumulator and writes into an array's next version add no step (a
        # sum over a loop is np.sum; y[i] = f(x[i]) in a loop is a map).
        self._height = {start: 1}
        # The pass frees each node once its pullback has run; these timings are taken with every
        # node alive to the end (the values the VJPs read stay where they were, and no node's
        # arrays go back to the allocator between two timed pullbacks), as they were measured
        # when the cost model was fitted: the pass is given the nodes, and this list holds them.
        held = list(tape.nodes)
        backward(tape.nodes, acc, start, self._visit)
        del held

    def _visit(self, i: int, node, g, pullback, acc) -> None:
        """engine.tape.backward's visitor: the node's chain, its VJPs' work and fixed cost, its
        forward and its closed form's share measured first, then its pullback, timed."""
        height = self._height
        h = height.pop(i, 1)
        if h > self.chain:
            self.chain = h
        passed = introspect.carried(node)
        for p in introspect.parents(node):
            hp = h if p in passed else h + 1
            if height.get(p, 0) < hp:
                height[p] = hp
        w = _work(node, g)
        if w is not None:  # the faster of two runs: the first may find the VJP's data out of the caches
            w = min(w, _work(node, g))
        fixed = None if w is None else self._fixed(node, g)
        self.fixed.append(fixed)
        timed_forward = self._forward_times(node, g) if self.forwards else None
        if timed_forward is not None:
            self.fwd.append(timed_forward[0])
            self.fwd_fixed.append(timed_forward[1])
        declared = closed_form_share(node, g, w)  # (solve's and cholesky's: declared beside their rules)
        self.lean.append(declared if declared is not None else 1.0 if w is None
                         else self._lean(node, g, w, timed_forward))
        t0 = _perf()
        pullback(node, g, acc)
        t = _perf() - t0
        self.times.append(t)
        self.work.append(t if w is None else w)
        # an operation: its kind and its output's shape (a loop repeats one; straight-line code
        # applies a kind to other shapes, each a call of its own in a closed form too)
        op = (introspect.operation(node), np.shape(g))
        self.kinds.add(op)
        self.ops.append((op, 1 if w is None else len(introspect.argnums(node))))

    def _fixed(self, node, g) -> float | None:
        """The node's VJP expressions timed on one-element values of the same ranks: their fixed
        cost (once per operation and ranks; the median of a few runs)."""
        key = (introspect.operation(node), _ranks(node, g))
        if key not in self._tiny:
            tiny = _shrunk(node, g)
            try:
                with np.errstate(all="ignore"):
                    self._tiny[key] = None if tiny is None else float(np.median([_work(*tiny) for _ in range(5)]))
            except Exception:  # noqa: BLE001 - a VJP that needs its real shapes (reshape, an axis): not known
                self._tiny[key] = None
        return self._tiny[key]

    def _forward_times(self, node, g) -> tuple:
        """(the node's forward operation alone on the values it was recorded with, the faster of
        two runs; the same operation on one-element values, once per operation and ranks): what
        a hand-written forward pays for it, without the Python around it. (None, None) for a
        node whose forward cannot be re-run."""
        fwd = introspect.forward(node)
        if fwd is None:
            return None, None
        key = (introspect.operation(node), _ranks(node, g))
        try:
            with np.errstate(all="ignore"):
                t = min(_timed_forward(fwd) for _ in range(2))
                if key not in self._tiny_fwd:
                    tiny, _ = _shrunk(node, g)
                    self._tiny_fwd[key] = min(_timed_forward(introspect.forward(tiny)) for _ in range(3))
        except Exception:  # noqa: BLE001 - values the forward no longer takes (mutated since): not known
            return None, None
        return t, self._tiny_fwd[key]

    def _lean(self, node, g, work: float, timed_forward: tuple | None = None) -> float:
        """The share of a lean node's VJP data work (introspect.lean: elementwise, or a
        memory-bound reduction) that its forward's data work per differentiated argument covers
        (1.0 for other nodes): both timed warm (``work``: the VJPs' time, the faster of two
        runs), above their one-element cost. ``timed_forward``: ``_forward_times`` of the node
        when this run took them already."""
        if not introspect.lean(node):
            return 1.0
        t, tiny = timed_forward if timed_forward is not None else self._forward_times(node, g)
        if t is None:
            return 1.0
        vjps = work - (self._fixed(node, g) or 0.0)
        if vjps <= 0.0:
            return 1.0
        return min(max(t - tiny, 0.0) * len(introspect.argnums(node)) / vjps, 1.0)


def _timed_forward(fwd) -> float:
    fn, vals, kwargs = fwd
    t0 = _perf()
    fn(*vals, **kwargs)
    return _perf() - t0


def _ranks(node, g) -> tuple:
    return tuple(np.ndim(v) for v in (g, *introspect.reads(node)))


def _one(v):
    """``v`` with every axis cut to length 1 (same rank, dtype and type), or v itself."""
    if type(v) is np.ndarray and v.ndim:
        return np.ascontiguousarray(v[(slice(0, 1),) * v.ndim])
    return v


def _shrunk(node, g):
    """(node, g) with every array cut to one element per axis, or None for other nodes."""
    tiny = introspect.with_values(node, _one)
    return None if tiny is None else (tiny, _one(g))


def _work(node, g) -> float | None:
    """Seconds of the NumPy work of a primitive's node (its VJPs, and the sums that undo
    broadcasting: introspect.vjp_work), run on their own; None for other nodes (rules,
    indexing, mutation)."""
    run = introspect.vjp_work(node, g)
    if run is None:
        return None
    t0 = _perf()
    run()
    return _perf() - t0


def _timed_run(grad, args, forwards: bool = False) -> _Timed:
    timed = _Timed()
    timed.forwards = forwards
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
    # one Python float operation: a closed form's per-operation cost on scalars in a recurrence
    # (its rule computes in floats, not NumPy calls: rk4 on a 2-state system, 400 products in a
    # chain; a map's scalar operations become NumPy calls over arrays); None: as call_s
    scalar_s: float | None = None

    def per_operation(self, shape, serial: bool) -> float:
        """What a closed form pays per operation with an output of ``shape``, in a recurrence
        (``serial``) or not."""
        return self.scalar_s if serial and shape == () and self.scalar_s is not None else self.call_s


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
    a, b = 0.5, 1.5
    scalar, _ = stable_median(lambda: a * b, 0.05)
    return Calibration(timer, max(small, 0.0), max(served - plain, 0.0), max(small_work, 0.0), call, scalar)


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
    lean_forward_s: float | None = None  # a hand-written forward: the recorded operations alone (_lean_forward)


def decompose(grad, args, runs: int = 3, derived_s: float | None = None) -> Decomposition:
    """Time each pullback of ``grad(*args)`` (a vjp) ``runs`` times; keep the fastest run.

    With ``derived_s`` (the replay's own time of the same gradient), the seconds are put at the
    replay's pace: the plain gradient is timed between the runs too, and every part is scaled
    by ``derived_s`` over its fastest time (within 0.5-2x). A shared machine that slows down for
    the few milliseconds of these runs (one gp_lml profile in four had its pullbacks 1.4x the
    others') would otherwise make the pullbacks a larger share of the derived time than they are."""
    cal = calibration()
    plain, timed = [], []
    for k in range(runs):
        t0 = _perf()
        grad(*args)
        plain.append(_perf() - t0)
        timed.append(_timed_run(grad, args, forwards=k == 0))  # the forwards re-run once
    best = min(timed, key=lambda t: sum(t.times))
    pace = 1.0 if not derived_s else min(max(derived_s / max(min(plain), 1e-12), 0.5), 2.0)
    times = np.maximum(np.asarray(best.times, dtype=float) - cal.timer_s, 0.0)
    work = np.minimum(np.maximum(np.asarray(best.work, dtype=float) - cal.timer_s, 0.0), times)
    fixed = np.asarray([cal.small_work_s if f is None else max(f - cal.timer_s, 0.0) for f in best.fixed], dtype=float)
    vector = _per_operation(_no_scalar_data(work - fixed, best.ops), [op for op, _ in best.ops])
    # A closed-form pullback's per-call cost: each operation once, the least of its VJPs' fixed
    # cost and a NumPy call per argument; in a recurrence (recurrent(): steps that each need the
    # last), once per step, so once per node.
    closed: dict = {}
    serial = recurrent(len(best.times), len(best.kinds), best.chain)
    for k, ((op, differentiated), f) in enumerate(zip(best.ops, fixed)):
        key = k if serial else op
        closed[key] = min(closed.get(key, f), f, differentiated * cal.per_operation(op[1], serial))
    forward = _lean_forward(timed[0], vector if len(timed[0].fwd) == len(vector) else None, serial, cal)
    return Decomposition(pullback_s=float(times.sum()) * pace, vector_pullback_s=float(vector.sum()) * pace,
                         nodes=len(best.times), operations=len(best.kinds), chain=best.chain, work_s=float(work.sum()) * pace,
                         lean_pullback_s=float((vector * np.asarray(best.lean, dtype=float)).sum()) * pace,
                         closed_fixed_s=float(sum(closed.values())) * pace,
                         lean_forward_s=None if forward is None else forward * pace)


def _lean_forward(run: _Timed, vector: np.ndarray | None, serial: bool, cal: Calibration) -> float | None:
    """A hand-written forward's cost: each recorded operation's NumPy work alone, re-run on its
    recorded values (``_Timed._forward``): the data work above its cost on one-element values,
    and that per-call cost once per distinct operation (a vectorised forward does not repeat a
    loop's per tape node), in a recurrence once per node (each step needs the last). A node whose
    forward cannot be re-run (indexing, mutation, a rule's own node) counts one NumPy call and
    its pullback's data work (``vector``: the reverse of an indexing or a copy moves as much data).
    None when the forwards were not timed."""
    if not run.fwd or len(run.fwd) != len(run.ops):
        return None
    fixed = np.asarray([cal.call_s if f is None else max(f - cal.timer_s, 0.0) for f in run.fwd_fixed], dtype=float)
    excess = np.asarray([(0.0 if vector is None else vector[k]) if t is None else (t - cal.timer_s) - fixed[k]
                         for k, t in enumerate(run.fwd)], dtype=float)
    data = _per_operation(_no_scalar_data(excess, run.ops), [op for op, _ in run.ops])
    calls: dict = {}
    for k, ((op, _), f) in enumerate(zip(run.ops, fixed)):
        key = k if serial else op
        calls[key] = min(calls.get(key, f), f, cal.per_operation(op[1], serial))
    return float(data.sum()) + float(sum(calls.values()))


def _no_scalar_data(excess: np.ndarray, ops: list) -> np.ndarray:
    """``excess`` with the nodes of scalar output (shape ``()``) at zero: an operation on one
    element is all per-call cost, and what its timings show above the one-element measurement is
    the machine's noise: summed over a loop of scalar operations beside busy processes, it made
    a large share of the gradient look like data work, and undersold a hand-write
    (docs/engine.md § Measurements behind the code)."""
    out = np.asarray(excess, dtype=float).copy()
    for k, (op, _) in enumerate(ops):
        if op[1] == ():
            out[k] = 0.0
    return out


def _per_operation(excess: np.ndarray, ops: list) -> np.ndarray:
    """Each node's data work (VJP work less fixed cost, ``excess``): each operation's total is
    clipped at zero, then shared as its nodes' positive parts are (clipped node by node, the noise
    of thousands of scalar additions summed to "data work" on a loaded machine)."""
    out, nodes = np.maximum(excess, 0.0), {}
    for k, op in enumerate(ops):
        nodes.setdefault(op, []).append(k)
    for idx in map(np.asarray, nodes.values()):
        positive = float(out[idx].sum())
        out[idx] *= max(float(excess[idx].sum()), 0.0) / positive if positive > 0 else 0.0
    return out
