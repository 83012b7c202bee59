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
    """Seconds of one call of each of ``fns``, sampled in turn (``interleaved``): each is the
    ``quantile`` of its samples (the lower quartile: a busy machine only ever adds time, so the
    faster samples are the call's own cost; the median when ``quantile`` is 0.5). ``calls``, if
    given, receives how many timed calls each got."""
    times = interleaved(fns, budget, min_rounds, max_rounds, group_s, calls=calls)
    return [float(np.quantile(t, quantile)) for t in times]


def interleaved(fns: list, budget: float = 0.2, min_rounds: int = 5, max_rounds: int = 500, group_s: float = 2e-3,
                calls: list | None = None, before: list | None = None) -> list[list[float]]:
    """Seconds of one call of each of ``fns``, one sample per round: the functions are sampled
    in turn (a group of calls of each per round) until ``budget`` seconds are spent, so that a
    machine that slows down for a while slows every one of them and their differences stay
    true. Each round calls a function as many times in a row as last about ``group_s`` (at least
    once), so that each is timed with its own data in the caches, as a program calling it in a
    loop runs it, not after another's memory traffic. ``before[i]`` (None or a callable) runs
    before each group of ``fns[i]``, untimed: what puts the state it is timed in in place (its
    rules in or out of the registry). Garbage collection is off while timing."""
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
        times: list[list[float]] = [[] for _ in fns]
        start = _perf()
        rounds = 0
        while rounds < max_rounds and (rounds < min_rounds or _perf() - start < budget):
            for fn, setup, k, out in zip(fns, setups, groups, times):
                if setup is not None:
                    setup()
                t0 = _perf()
                for _ in range(k):
                    fn()
                out.append((_perf() - t0) / k)
            rounds += 1
            if ON_CALL:
                _called()
    finally:
        if was_enabled:
            gc.enable()
    if calls is not None:
        calls[:] = [k * len(t) for k, t in zip(groups, times)]
    return times


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
