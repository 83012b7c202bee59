"""adcli.measure: medians timed in turn (on a fake clock: a test asserts what is called and
counted, never how long a shared machine took)."""

import gc

import numpy as np

from adcli import measure
from adcli.measure import alternating_medians


class Clock:
    """A fake ``perf_counter`` that moves only when a timed function says it took time."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now  # (the times below are powers of two: their sums are exact)


def test_alternating_medians_time_each_function_in_turn(monkeypatch):
    calls = []
    clock = Clock()
    monkeypatch.setattr(measure, "_perf", clock)
    monkeypatch.setattr(measure, "_cpu", clock)

    def sleeper(seconds, name):
        def run():
            calls.append(name)
            clock.now += seconds
        return run

    counted: list = []
    fast, slow = alternating_medians([sleeper(2 ** -11, "a"), sleeper(2 ** -8, "b")], budget=0.05, min_rounds=5,
                                     calls=counted)
    assert (fast, slow) == (2 ** -11, 2 ** -8)
    # warmed (and timed once) each, then called in turn, a group of calls each lasting about
    # 2 ms: several of the 0.49 ms call, one of the 3.9 ms call, round after round
    assert calls[:4] == ["a", "a", "b", "b"]
    runs = []
    for name in calls[4:]:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    assert [r[0] for r in runs] == ["a", "b"] * (len(runs) // 2) and len(runs) >= 10
    a_runs, b_runs = {r[1] for r in runs if r[0] == "a"}, {r[1] for r in runs if r[0] == "b"}
    assert a_runs == {4} and b_runs == {1}  # 2 ms over 0.49 ms, and at least once
    # the timed calls of each, as counted (the warm-up and the sizing call apart)
    assert counted == [calls[4:].count("a"), calls[4:].count("b")]
    assert gc.isenabled()


def test_a_group_lasts_about_group_s(monkeypatch):
    n = {"a": 0}
    clock = Clock()
    monkeypatch.setattr(measure, "_perf", clock)
    monkeypatch.setattr(measure, "_cpu", clock)

    def tiny():
        n["a"] += 1
        clock.now += 2 ** -15

    assert alternating_medians([tiny], budget=0.0, min_rounds=3, group_s=2 ** -10) == [2 ** -15]
    assert n["a"] == 2 + 3 * 32  # warmed, sized, then three rounds of a group lasting group_s


class TwoClocks:
    """Elapsed time and CPU time moving apart: ``wall`` seconds pass for each ``cpu`` second
    a timed function says it used (a loaded machine: > 1; threads on two cores: < 1)."""

    def __init__(self, wall_per_cpu):
        self.cpu = 0.0
        self.wall_per_cpu = wall_per_cpu

    def work(self, seconds):
        self.cpu += seconds

    def perf(self):
        return self.cpu * self.wall_per_cpu

    def process(self):
        return self.cpu


def _timed_on(monkeypatch, clocks):
    monkeypatch.setattr(measure, "_perf", clocks.perf)
    monkeypatch.setattr(measure, "_cpu", clocks.process)


def test_single_threaded_calls_are_timed_in_cpu_time_which_a_busy_machine_does_not_inflate(monkeypatch):
    clocks = TwoClocks(wall_per_cpu=2.0)  # half of each second went to other processes
    _timed_on(monkeypatch, clocks)
    rounds = measure.alternating_rounds([lambda: clocks.work(2 ** -10)], budget=0.02)
    assert rounds.clock == "cpu" and rounds.quantile(0) == 2 ** -10


def test_calls_on_more_than_one_core_are_timed_in_elapsed_time(monkeypatch):
    clocks = TwoClocks(wall_per_cpu=0.5)  # two threads busy: twice the CPU time of the elapsed
    _timed_on(monkeypatch, clocks)
    rounds = measure.alternating_rounds([lambda: clocks.work(2 ** -10)], budget=0.02)
    assert rounds.clock == "wall" and rounds.quantile(0) == 2 ** -11


def test_a_difference_is_the_median_of_paired_rounds_with_an_interval_that_holds_it():
    # b takes 1 ms less than a in every round, and the machine's speed moves both alike
    speeds = [1.0, 1.0, 3.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    a = [5e-3 * s for s in speeds]
    b = [4e-3 * s for s in speeds]
    rounds = measure.Rounds([a, b], "cpu", [12, 12])
    mid, lo, hi = rounds.difference(0, 1)
    assert lo <= mid <= hi
    assert mid == 1e-3 and lo == 1e-3 and hi <= 2e-3
    assert rounds.difference(1, 0)[0] == -1e-3
    # the quantiles of each apart would mix the slow rounds in: the difference of the pairs does not
    few = measure.Rounds([a[:5], b[:5]], "cpu", [5, 5])
    assert few.difference(0, 1)[1:] == (min(np.subtract(a[:5], b[:5])), max(np.subtract(a[:5], b[:5])))


def test_rounds_go_on_past_the_budget_while_asked_and_within_the_extra(monkeypatch):
    clocks = TwoClocks(wall_per_cpu=1.0)
    _timed_on(monkeypatch, clocks)
    asked = []

    def more(rounds):
        asked.append(len(rounds.seconds[0]))
        return len(rounds.seconds[0]) < 12

    rounds = measure.alternating_rounds([lambda: clocks.work(2 ** -9)], budget=2 ** -9 * 5, min_rounds=5,
                                        group_s=0.0, more=more, extra=1.0)
    assert len(rounds.seconds[0]) == 12 and asked[-1] == 12
    capped = measure.alternating_rounds([lambda: clocks.work(2 ** -9)], budget=2 ** -9 * 5, min_rounds=5,
                                        group_s=0.0, more=lambda r: True, extra=2 ** -9 * 3)
    assert len(capped.seconds[0]) == 8  # 5 rounds of budget, then 3 more of extra


def test_interleaved_runs_each_functions_hook_untimed_before_each_group(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(measure, "_perf", clock)
    monkeypatch.setattr(measure, "_cpu", clock)
    events = []
    state = {"rule": None}

    def hook(name):
        def put():
            events.append(f"{name}-hook")
            state["rule"] = name
            clock.now += 1.0  # a hook's time is never a call's
        return put

    def gradient():
        events.append(state["rule"])
        clock.now += 2 ** -8 if state["rule"] == "without" else 2 ** -10

    times = measure.interleaved([gradient, gradient], budget=0.0, min_rounds=4, group_s=2 ** -10,
                                before=[hook("without"), hook("with")])
    assert times == [[2 ** -8] * 4, [2 ** -10] * 4]  # one sample per round, each in its own state
    # each group after its hook: warmed and sized first, then round after round, in turn
    assert events[:6] == ["without-hook", "without", "without", "with-hook", "with", "with"]
    assert events[6:] == ["without-hook", "without", "with-hook", "with"] * 4


def test_a_spread_is_read_from_its_quartiles():
    s = measure.Spread.of([5.0, 1.0, 3.0, 2.0, 4.0, 100.0, 2.5, 3.5, 4.5])
    assert (s.fastest, s.low, s.median, s.high, s.slowest, s.rounds) == (1.0, 2.5, 3.5, 4.5, 100.0, 9)
    # a preempted round moves the slowest, not the range
    assert s.overlaps(measure.Spread.of([4.5, 4.5, 6, 7, 8])) and not s.overlaps(measure.Spread.of([4.6, 4.6, 6, 7, 8]))
    assert s.to_json()["low_s"] == 2.5
