"""Which gradients a profiling session records in full, and the call tree they add up to.

Recording a gradient in full (each call's signature, time and allocations; the reverse pass
timed in stretches) costs a fixed amount per NumPy call the engine dispatches and per gradient:
from a few percent to nearly as much again as the plain gradient on the bundled workloads
(docs/engine.md § Measurements behind the code). A program that takes many
gradients (a training loop) does not need every one recorded to rank its signatures. As with
torch.profiler's schedules, the session records the first two gradients of each *kind* (the
function handed to ``grad``, by its code) in full, times the next one whole, and from then on
records one in full only while the full recordings' extra time (the first's one-time costs,
signatures and samples, left out) stays within ``budget`` (5%) of the program's gradient time
so far, spread evenly over the run. A full recording's time is taken from the session's
``start`` hook to its ``finish``: the bookkeeping around the two passes (the sampler's choice
under the lock, the garbage collector's switch) is part of what it costs the program. The
others are timed whole (forward and reverse), with the hooks doing nothing per call; they cost
the hooks' own work on each call (their arguments' kind checked, the time taken), on top
of the budget. The call tree's per-run figures are the full recordings'
scaled, kind by kind: counts (calls, primitives, allocations) by the kind's gradients over its
full recordings, seconds by the kind's forward (reverse) seconds over its full recordings', so
that the tree adds up to the run's measured times. Exact counts when a kind's gradients make
the same calls (a training loop's steps), an estimate otherwise (a kind whose
calls vary from step to step, by data or by a schedule). A kind is the function's code, so the
generator and the discriminator of a GAN, or a loss and a validation metric, are scaled apart;
and with the descriptors of its arguments (docs/descriptors.md: dtypes, ranks, layouts), so
that a float32 pass, or one sample where the steps pass a batch, is a kind of its own, recorded
in full the first times (a smaller last batch has the same signatures: its counts scale
exactly). What only a closure's values or the data change from step to step (a branch on a
value, a schedule) shows only in the gradients recorded in full: ``--every-gradient`` sees
every one. Gradients timed whole are counted by their own thread without the session's lock
(``Batch``).

``adcli profile --every-gradient`` records every gradient in full; a profile says how many were
(``totals.profiled_gradients``).
"""

from __future__ import annotations

import copy
import functools

import numpy as np

from ..engine.descriptors import describe
from ..engine.grad import stop_gradient
from ..engine.pytree import flatten
from ..engine.signature import signature_key

ndarray = np.ndarray

OVERHEAD_BUDGET = 0.05  # the full recordings' extra time, as a share of the program's gradient time


class Kind:
    """The gradients of one function handed to ``grad``: their call tree (full recordings only)
    and their counts and seconds."""

    __slots__ = ("root", "gradients", "full", "full_done", "warm", "warm_s", "light", "plain", "since", "seconds")

    def __init__(self, root) -> None:
        self.root = root  # a CallNode standing for the program, above this kind's calls
        self.gradients = 0  # started
        self.full = 0  # started, recorded in full
        self.full_done = 0  # finished, recorded in full
        # the full recordings after the first (whose one-time costs, the signatures' and the
        # samples', are not the profiler's cost per gradient): what the budget weighs
        self.warm = 0
        self.warm_s = 0.0
        self.light = 0  # finished, timed whole only
        # the fastest of those: the gradient's own time, what a full recording is compared with
        # (a mean let one slow gradient, the first after a pause, make full recordings look free)
        self.plain = float("inf")
        self.since = 0  # timed whole since the last full recording
        # [forward, reverse] seconds of the full recordings, and of all the kind's gradients
        self.seconds = [[0.0, 0.0], [0.0, 0.0]]

    @property
    def scale(self) -> float:
        """What one full recording's counts stand for: the kind's gradients over its full ones."""
        return self.gradients / self.full if self.full else 1.0

    def time_scale(self, phase: int) -> float:
        """What one full recording's seconds of ``phase`` (0 forward, 1 reverse) stand for: the
        kind's seconds over its full recordings', so that the tree adds up to the run's times
        (the gradients timed whole ran without the per-call bookkeeping)."""
        full, every = self.seconds[0][phase], self.seconds[1][phase]
        return every / full if full > 0 else self.scale


def kind_of(f):
    """The key of the gradients of ``f``: its code, so that a lambda made again in a loop, a
    bound method of another instance or a functools.partial of the same function is one kind.
    Wrappers are looked through (``__wrapped__``: a dispatch point's code is every dispatch
    point's)."""
    for _ in range(8):
        inner = getattr(f, "__wrapped__", None)
        if inner is None:
            inner = getattr(f, "__func__", None)
        if inner is None and isinstance(f, functools.partial):
            inner = f.func
        if inner is None:
            break
        f = inner
    code = getattr(f, "__code__", None)
    return code if code is not None else (type(f), getattr(f, "__qualname__", None))


class Batch:
    """One thread's gradients timed whole since its last visit to the sampler, counted without
    the lock (only that thread writes it); the sampler folds it in (``settle``) when the thread
    next asks, and before anyone reads the totals. ``credit``: how many more gradients of the
    same kind (``code``, ``key``) the thread may time whole without asking: as many as the
    budget says must pass before the next full recording."""

    __slots__ = ("kind", "f", "code", "key", "kept", "credit", "n", "forward_s", "reverse_s", "failed", "gc", "hidden", "alone",
                 "fastest")

    def __init__(self) -> None:
        self.kind = self.f = self.code = self.key = None
        # the arguments of the gradient that set ``key``, those whose descriptors the same
        # object keeps (see _keepable; None for the others), or None when it had keywords
        self.kept = None
        self.credit = 0
        self.n = self.failed = 0
        self.forward_s = self.reverse_s = 0.0
        self.gc = False  # the thread turned the garbage collector off for the gradient in progress
        self.hidden = False  # the session stepped aside for it (hooks uninstalled, see Session.start)
        self.alone = False  # the program had one thread when this thread last asked the sampler
        self.fastest = float("inf")


def _keepable(a):
    """For an argument whose descriptor the next gradient's same object is sure to have:
    ``(a, a.ndim)`` for an array (its dtype is fixed, its rank and layout change only by
    assigning ``.shape``, whose rank is checked), ``(a, None)`` for a Python number; else None
    (a traced value, a container whose items may change)."""
    t = type(a)
    if t is ndarray:
        return (a, a.ndim)
    if t is float or t is int:
        return (a, None)
    return None


def _same_key(batch: Batch, args, kwargs) -> bool:
    """Whether ``args`` and ``kwargs`` have the descriptors of the batch's kind (``batch.key``):
    the arguments passed again as the same objects (a training loop's data, its constants)
    are not described again, the others are."""
    kept, key = batch.kept, batch.key
    if kwargs or kept is None or len(args) != len(kept):
        return signature_key(tuple(args), kwargs or {}) == key
    for i, a in enumerate(args):
        k = kept[i]
        if k is not None and a is k[0] and (k[1] is None or a.ndim == k[1]):
            continue
        if describe(a) != key[i]:
            return False
    return True


_CREDIT_MAX = 1000  # gradients a thread times whole before it asks again, at most


class Sampler:
    """The session's choice, gradient by gradient, and its counts of all of them. Every method
    but ``fast`` and ``new_batch``'s result's own counts runs under the session's lock."""

    def __init__(self, every: bool = False, budget: float = OVERHEAD_BUDGET) -> None:
        self.every = every
        self.budget = budget
        self.kinds: dict = {}
        self.batches: list = []
        self.gradients = self.failed = 0
        self.forward_s = self.reverse_s = 0.0

    def new_batch(self) -> Batch:
        batch = Batch()
        self.batches.append(batch)
        return batch

    @staticmethod
    def fast(batch: Batch, f, args, kwargs) -> bool:
        """Whether a gradient of ``f`` starting now is timed whole on ``batch``'s credit (the same
        kind as the thread's last): decided by the thread alone, without the lock."""
        if f is not batch.f and kind_of(f) is not batch.code:
            return False
        if not _same_key(batch, args, kwargs):
            return False
        batch.credit -= 1
        return True

    def choose(self, f, new_root, args, kwargs, batch: Batch) -> tuple[Kind, bool]:
        """(the kind of a gradient of ``f`` starting now with ``args`` and ``kwargs``, whether to
        record it in full); ``new_root()`` makes a new kind's root node. A gradient timed whole
        is counted on ``batch`` (the thread's) when it ends, and gives the batch its credit."""
        self.settle(batch)
        code = kind_of(f)
        key = (code, signature_key(tuple(args), kwargs or {}))
        kind = self.kinds.get(key)
        if kind is None:
            kind = self.kinds[key] = Kind(new_root())
        full = self.every or kind.full < 2 or (kind.since > 0 and kind.warm > 0 and self._affordable(kind))
        if full:
            kind.gradients += 1
            kind.full += 1
            kind.since = 0
            self.gradients += 1
        batch.credit = self._credit(kind, full)
        batch.kind, batch.f, batch.code, batch.key = kind, f, code, key[1]
        batch.kept = None if kwargs else tuple([_keepable(a) for a in args])
        return kind, full

    def done(self, kind: Kind, forward: float, reverse: float, failed: bool, cost: float | None = None) -> None:
        """A gradient recorded in full ended: its ``forward`` and ``reverse`` seconds, and what it
        cost the program in all (``cost``: the hooks' own work before and after the passes
        included; the two passes when not given)."""
        if kind.full_done:
            kind.warm += 1
            kind.warm_s += forward + reverse if cost is None else max(cost, forward + reverse)
        kind.full_done += 1
        kind.seconds[0][0] += forward
        kind.seconds[0][1] += reverse
        kind.seconds[1][0] += forward
        kind.seconds[1][1] += reverse
        self.forward_s += forward
        self.reverse_s += reverse
        self.failed += failed

    def settle(self, batch: Batch) -> None:
        """Fold the gradients ``batch`` timed whole into its kind and the totals."""
        if not batch.n:
            return
        kind = batch.kind
        kind.gradients += batch.n
        kind.light += batch.n
        kind.since += batch.n
        kind.plain = min(kind.plain, batch.fastest)
        kind.seconds[1][0] += batch.forward_s
        kind.seconds[1][1] += batch.reverse_s
        self.gradients += batch.n
        self.forward_s += batch.forward_s
        self.reverse_s += batch.reverse_s
        self.failed += batch.failed
        batch.n = batch.failed = 0
        batch.forward_s = batch.reverse_s = 0.0
        batch.fastest = float("inf")

    def settle_all(self) -> None:
        for batch in self.batches:
            self.settle(batch)

    def _extra(self) -> tuple[float, float]:
        """(the full recordings' extra seconds, all the gradients' seconds), so far."""
        extra = elapsed = 0.0
        for k in self.kinds.values():
            elapsed += k.seconds[1][0] + k.seconds[1][1]
            # a kind not yet timed whole: its full recordings count whole, as if all were extra
            plain = k.plain if k.light else 0.0
            extra += max(k.warm_s - k.warm * plain, 0.0)
        return extra, elapsed

    @staticmethod
    def _more(kind: Kind) -> float:
        """The extra seconds one more full recording of ``kind`` is expected to take."""
        return max(kind.warm_s / kind.warm - kind.plain, 0.0)

    def _affordable(self, kind: Kind) -> bool:
        """Whether one more full recording of ``kind`` keeps the extra time within the budget."""
        extra, elapsed = self._extra()
        return extra + self._more(kind) <= self.budget * (elapsed + kind.plain)

    def _credit(self, kind: Kind, full: bool) -> int:
        """How many gradients of ``kind`` to time whole before asking again: at least the pace
        the budget allows (one full recording per ``extra / (budget * plain)`` gradients, so
        that they spread over the run instead of coming in bursts), more while the full
        recordings so far are over the budget (a first one, with its cold caches and samples,
        often is). Each gradient is taken to last its kind's fastest time timed whole."""
        if self.every or kind.warm == 0 or kind.light == 0:
            return 0  # nothing to go by yet: ask again
        plain, more = kind.plain, self._more(kind)
        if self.budget <= 0 or plain <= 0:
            return _CREDIT_MAX
        pace = more / (self.budget * plain)
        extra, elapsed = self._extra()
        behind = ((extra + more) / self.budget - elapsed - plain) / plain  # gradients still to pass
        return int(min(max(pace - (0 if full else 1), behind - 1, 0), _CREDIT_MAX))

    @property
    def profiled(self) -> int:
        return sum(k.full for k in self.kinds.values())


_COUNTS = ("calls", "prims", "fwd_allocs", "fwd_bytes", "rev_allocs", "rev_bytes")


def merged(kinds, root):
    """One call tree under ``root`` (an empty CallNode) from the kinds' trees: each node's
    counts scaled by its kind's ``scale`` (rounded), its seconds by ``time_scale``."""
    new = type(root)
    for kind in kinds:
        scale, fwd, rev = kind.scale, kind.time_scale(0), kind.time_scale(1)
        stack = [(root, kind.root)]
        while stack:
            dst, src = stack.pop()
            for name in _COUNTS:
                v = getattr(src, name)
                setattr(dst, name, getattr(dst, name) + (v if scale == 1.0 else round(v * scale)))
            dst.fwd += src.fwd * fwd
            dst.rev += src.rev * rev
            for sid, child in src.children.items():
                d = dst.children.get(sid)
                if d is None:
                    d = dst.children[sid] = new(child.sig, dst)
                stack.append((d, child))
    return root


def capture(args, kwargs, limit: int, budget: int):
    """(a copy of a call's arguments, of its keywords, their bytes) with traced values by their
    plain value, or a marker instead of the arguments when they are too big to keep: more than
    ``limit`` elements for this call, or more than the ``budget`` bytes the samples have left."""
    try:
        plain = stop_gradient(list(args))
        plain_kw = stop_gradient(dict(kwargs))
        arrays = [v for v in flatten(plain)[0] + flatten(plain_kw)[0] if isinstance(v, (np.ndarray, np.generic))]
        if sum(np.size(v) for v in arrays) > limit:
            return "too-big", None, 0
        nbytes = sum(v.nbytes for v in arrays)
        if nbytes > budget:
            return "over the total sample budget", None, 0
        return copy.deepcopy(plain), copy.deepcopy(plain_kw), nbytes
    except Exception:  # noqa: BLE001 - arguments that cannot be copied are simply not sampled
        return "uncopyable", None, 0
