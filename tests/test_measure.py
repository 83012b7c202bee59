"""adcli.measure: medians timed in turn."""

import gc
import time

from adcli.measure import alternating_medians


def test_alternating_medians_time_each_function_in_turn():
    calls = []

    def sleeper(seconds, name):
        def run():
            calls.append(name)
            time.sleep(seconds)
        return run

    counted: list = []
    fast, slow = alternating_medians([sleeper(0.0005, "a"), sleeper(0.004, "b")], budget=0.05, min_rounds=5,
                                     calls=counted)
    assert 0.0005 <= fast < 0.004 <= slow
    # warmed (and timed once) each, then called in turn, a group of calls each lasting about
    # 2 ms: several of the 0.5 ms call, one of the 4 ms call, round after round
    assert calls[:4] == ["a", "a", "b", "b"]
    runs = []
    for name in calls[4:]:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    assert [r[0] for r in runs] == ["a", "b"] * (len(runs) // 2) and len(runs) >= 10
    a_runs, b_runs = {r[1] for r in runs if r[0] == "a"}, {r[1] for r in runs if r[0] == "b"}
    assert len(a_runs) == 1 and a_runs.pop() >= 2 and b_runs == {1}
    # the timed calls of each, as counted (the warm-up and the sizing call apart)
    assert counted == [calls[4:].count("a"), calls[4:].count("b")]
    assert gc.isenabled()


def test_a_group_lasts_about_group_s():
    n = {"a": 0}

    def tiny():
        n["a"] += 1

    alternating_medians([tiny], budget=0.0, min_rounds=3, group_s=1e-3)
    assert n["a"] > 3 * 20  # a call of well under 50 µs: dozens per round
