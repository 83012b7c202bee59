"""Measuring: a stable median time and the peak memory of a call.

One home for both, below the rules, the test kit and the profiler that use them
(docs/architecture.md: engine <- measure <- rules <- testing <- profiler ...).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from dataclasses import dataclass
from typing import Callable

import numpy as np

_perf = time.perf_counter
_cpu = time.process_time  # the process's CPU time (all its threads): see alternating_rounds


ON_CALL: list = []  # callbacks run after each timed call (a progress display counting replayed calls)


def _called() -> None:
    for hook in ON_CALL:
        hook()


def stable_median(fn, budget: float = 0.2, min_repeats: int = 5, max_repeats: int = 500) -> tuple[float, int]:
    """Median seconds of ``fn()`` and the number of runs: at least ``min_repeats`` runs, more
    until ``budget`` seconds are spent or ``max_repeats`` reached. Garbage collection is off while
    timing, as in timeit: a collection landing in one run is not the call's cost."""
    fn()  # warm caches
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        times = []
        start = _perf()
        while len(times) < max_repeats and (len(times) < min_repeats or _perf() - start < budget):
            t0 = _perf()
            fn()
            times.append(_perf() - t0)
            if ON_CALL:
                _called()
    finally:
        if was_enabled:
            gc.enable()
    return float(np.median(times)), len(times)


def alternating_medians(fns: list, budget: float = 0.2, min_rounds: int = 5, max_rounds: int = 500,
                        quantile: float = 0.25, group_s: float = 2e-3, calls: list | None = None) -> list[float]:
    """Seconds of one call of each of ``fns``, sampled in turn (:func:`alternating_rounds`):
    each is the ``quantile`` of its samples (the lower quartile: a busy machine only ever adds
    time, so the faster samples are the call's own cost; the median when ``quantile`` is 0.5)."""
    rounds = alternating_rounds(fns, budget, min_rounds, max_rounds, group_s)
    if calls is not None:
        calls[:] = rounds.calls
    return [rounds.quantile(k, quantile) for k in range(len(fns))]


@dataclass
class Rounds:
    """Seconds of one call of each function, round by round, timed in turn: ``seconds[k][r]``
    for function ``k`` in round ``r``. ``clock`` says which clock timed them ("cpu": the
    process's CPU time, which a busy machine does not inflate; "wall": elapsed time, for calls
    that ran on more than one core)."""

    seconds: list
    clock: str
    calls: list

    def quantile(self, k: int, q: float = 0.5) -> float:
        return float(np.quantile(self.seconds[k], q))

    def difference(self, a: int, b: int, level: float = 0.9) -> tuple[float, float, float]:
        """How much longer a call of ``a`` takes than one of ``b``: the median of the per-round
        differences (each round times both within milliseconds: a machine that slows down slows
        both), and a distribution-free ``level`` confidence interval for it (order statistics
        of the differences; their whole range below 9 rounds)."""
        d = np.sort(np.subtract(self.seconds[a], self.seconds[b]))
        n = len(d)
        half = _Z[level] * n ** 0.5 / 2
        lo, hi = int(np.floor(n / 2 - half)), int(np.ceil(n / 2 + half)) - 1
        lo, hi = max(lo, 0), min(hi, n - 1)
        return float(np.median(d)), float(d[lo]), float(d[hi])


_Z = {0.8: 1.2816, 0.9: 1.6449, 0.95: 1.96}


def interleaved(fns: list, budget: float = 0.2, min_rounds: int = 5, max_rounds: int = 500, group_s: float = 2e-3,
                calls: list | None = None, before: list | None = None) -> list[list[float]]:
    """Seconds of one call of each of ``fns``, one sample per round (:func:`alternating_rounds`'
    seconds); ``calls``, if given, receives how many timed calls each got."""
    rounds = alternating_rounds(fns, budget, min_rounds, max_rounds, group_s, before=before)
    if calls is not None:
        calls[:] = rounds.calls
    return rounds.seconds


def alternating_rounds(fns: list, budget: float = 0.2, min_rounds: int = 5, max_rounds: int = 500,
                       group_s: float = 2e-3, more=None, extra: float = 0.0, before: list | None = None) -> Rounds:
    """Time each of ``fns`` in turn (a group of calls of each per round) until ``budget``
    seconds are spent: a machine that slows down for a while slows every one of them, so their
    differences stay true. Each round calls a function as many times in a row as last about
    ``group_s`` (at least once), so that each is timed with its own data in the caches, as a
    program calling it in a loop runs it, not after another's memory traffic. Garbage
    collection is off while timing.

    Each group is timed on two clocks: elapsed time and the process's CPU time. Single-threaded
    work is reported in CPU time, which other processes on a loaded machine do not inflate (one
    replay measured derived/primal 6.3-8.0 in elapsed time, 3.5 in CPU time); when the calls
    ran on more than one core (CPU time over 1.15x the elapsed: a threaded BLAS), in elapsed
    time.

    ``more(rounds) -> bool``: once ``budget`` is spent, asked after each further round whether
    to go on (an interval not yet narrow enough), for up to ``extra`` seconds more. ``before[i]``
    (None or a callable) runs before each group of ``fns[i]``, untimed: what puts the state it is
    timed in in place (its rules in or out of the registry)."""
    setups = list(before) if before is not None else [None] * len(fns)
    groups = []
    for fn, setup in zip(fns, setups):
        if setup is not None:
            setup()
        fn()  # warm caches
        t0 = _perf()
        fn()
        groups.append(max(1, int(group_s / max(_perf() - t0, 1e-9))))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        wall: list[list[float]] = [[] for _ in fns]
        cpu: list[list[float]] = [[] for _ in fns]
        start = _perf()
        rounds = 0
        while rounds < max_rounds:
            spent = _perf() - start
            if rounds >= min_rounds and spent >= budget:
                if more is None or spent >= budget + extra or not more(_chosen(wall, cpu, groups)):
                    break
            for fn, setup, k, w, c in zip(fns, setups, groups, wall, cpu):
                if setup is not None:
                    setup()
                c0, t0 = _cpu(), _perf()
                for _ in range(k):
                    fn()
                t1, c1 = _perf(), _cpu()
                w.append((t1 - t0) / k)
                c.append((c1 - c0) / k)
            rounds += 1
            if ON_CALL:
                _called()
    finally:
        if was_enabled:
            gc.enable()
    return _chosen(wall, cpu, groups)


def _chosen(wall: list, cpu: list, groups: list) -> Rounds:
    calls = [k * len(t) for k, t in zip(groups, wall)]
    total_wall, total_cpu = sum(map(sum, wall)), sum(map(sum, cpu))
    if total_wall > 0 and total_cpu <= _THREADED * total_wall:
        return Rounds(cpu, "cpu", calls)
    return Rounds(wall, "wall", calls)


_THREADED = 1.15  # CPU time over elapsed time above which the calls ran on more than one core


@dataclass(frozen=True)
class Spread:
    """How one call's time varied over rounds of timing: the fastest, the lower quartile, the
    median, the upper quartile and the slowest round, in seconds. Its noise range is the
    quartiles' (the middle half of the rounds: one round a busy machine preempted moves the
    slowest, not the range)."""

    fastest: float
    low: float  # lower quartile
    median: float
    high: float  # upper quartile
    slowest: float
    rounds: int

    @classmethod
    def of(cls, seconds: list) -> "Spread":
        q = np.quantile(np.asarray(seconds, dtype=float), [0.0, 0.25, 0.5, 0.75, 1.0])
        return cls(*(float(v) for v in q), len(seconds))

    def overlaps(self, other: "Spread") -> bool:
        """Whether the two noise ranges overlap: no difference beyond noise."""
        return self.low <= other.high and other.low <= self.high

    def to_json(self) -> dict:
        return {"fastest_s": self.fastest, "low_s": self.low, "median_s": self.median, "high_s": self.high,
                "slowest_s": self.slowest, "rounds": self.rounds}


def peak_bytes(fn) -> int:
    """Peak memory ``fn()`` allocates above what was live before it (tracemalloc)."""
    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return int(max(tracemalloc.get_traced_memory()[1] - base, 0))
    finally:
        if not was:
            tracemalloc.stop()


@dataclass
class Measurement:
    """Median seconds of a call, and the peak memory it allocated on top of what was live
    before (tracemalloc: NumPy buffers and Python objects)."""

    seconds: float
    peak_bytes: int


def measure(fn: Callable, repeats: int = 15) -> Measurement:
    """Median wall time of ``fn()`` over exactly ``repeats`` calls, and one call's peak memory."""
    seconds, _ = stable_median(fn, budget=0.0, min_repeats=repeats, max_repeats=repeats)
    return Measurement(seconds, peak_bytes(fn))
