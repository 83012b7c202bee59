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

    fast, slow = alternating_medians([sleeper(0.001, "a"), sleeper(0.004, "b")], budget=0.05, min_rounds=5)
    assert 0.001 <= fast < 0.004 <= slow
    # warmed once each, then called in turn: a, b, a, b, ...
    assert calls[:2] == ["a", "b"] and all(calls[i] != calls[i + 1] for i in range(len(calls) - 1))
    assert calls.count("a") == calls.count("b") >= 6
    assert gc.isenabled()
