"""profiler.decompose: what a derived rule's time is made of (docs/advisor.md § What is measured)."""

import numpy as np

from adcli.engine.grad import vjp
from adcli.profiler.decompose import calibration, decompose, source_lines


def test_a_loop_of_scalar_operations_is_per_operation_cost():
    x = np.linspace(0.1, 1.0, 200)

    def loop(v):
        total = 0.0
        for i in range(200):
            total = total + v[i] * 2.0
        return total

    parts = decompose(vjp(loop, 0, 1.0), [x])
    assert parts.nodes >= 400 and parts.operations <= 4  # getitem, multiply, add: repeated
    assert 0 < parts.work_s <= parts.pullback_s
    # on one-element values, the NumPy work is NumPy's per-call cost: little scales with data
    assert parts.vector_pullback_s < 0.5 * parts.work_s


def test_work_on_large_arrays_scales_with_data():
    a = np.random.default_rng(0).standard_normal((400, 400))

    def big(m):
        return np.sum(np.sin(m) * m)

    parts = decompose(vjp(big, 0, 1.0), [a])
    assert parts.nodes <= 4 and parts.operations == parts.nodes
    # 160,000 elements: nearly all of the NumPy work is work on data
    assert parts.vector_pullback_s > 0.8 * parts.work_s and parts.work_s <= parts.pullback_s


def test_calibration_is_positive_and_cached():
    c = calibration()
    assert c.timer_s >= 0 and c.small_pullback_s > 0 and c.small_work_s > 0 and c.rule_call_s > 0
    assert calibration() is c


def test_source_lines():
    def three():
        a = 1
        return a

    assert source_lines(three) == 3 and source_lines(np.sum) is None
