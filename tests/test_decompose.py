"""profiler.decompose: what a derived rule's time is made of (docs/advisor.md § What is measured).

These tests check the decomposition's structure (which nodes it counts, which parts it keeps
whole, which fixed cost it sets against each node) and its arithmetic on fake clocks; the shares
it measures on real arrays are timings, which benchmarks/claims.py reports."""

from types import SimpleNamespace

import numpy as np
import pytest

from adcli.engine import introspect
from adcli.engine.grad import vjp
from adcli.engine.hooks import Session
from adcli.engine.rules import linalg
from adcli.profiler import closed_forms as cf
from adcli.profiler import decompose as dec
from adcli.profiler.build import source_lines
from adcli.profiler.decompose import Calibration, _timed_run, calibration, decompose


def ordered(parts):
    """What holds by construction, whatever the clock read: each part is a share of the one before."""
    assert 0 <= parts.lean_pullback_s <= parts.vector_pullback_s <= parts.work_s <= parts.pullback_s, parts
    assert 0 <= parts.closed_fixed_s


def op_names(timed):
    """Each timed node's operation, by name: the primitive's, else the pullback function's."""
    return [kind[1].name if isinstance(kind, tuple) else kind.__name__ for (kind, _), _ in timed.ops]


def by_name(timed, name, field):
    return [v for n, v in zip(op_names(timed), getattr(timed, field)) if n == name]


class Clock:
    """A fake ``perf_counter``: it moves only when ``charge`` says so (a wrapped call's cost)."""

    def __init__(self):
        self.now = 0.0
        self.reads = 0

    def __call__(self):
        self.reads += 1
        return self.now

    def charge(self, fn, cost, preempted=0.0):
        """``fn`` costing ``cost``; its first call ``preempted`` more (a busy machine's pause)."""
        calls = []

        def run(*a, **k):
            out = fn(*a, **k)
            self.now += cost + (preempted if not calls else 0.0)
            calls.append(1)
            return out
        return run


class Nodes(Session):
    """Keeps the tape's nodes of one gradient (the cotangents are not needed: the tests pass their own)."""

    def backward(self, tape, acc, start):
        self.nodes = list(tape.nodes[:start + 1])
        super().backward(tape, acc, start)


def solves(node):
    return introspect.name(node) == "_pb_solve"


def recorded(f, argnums, args):
    from adcli.engine import hooks

    session = Nodes()
    hooks.install(session)
    try:
        vjp(f, argnums, 1.0)(*args)
    finally:
        hooks.uninstall()
    return [n for n in session.nodes if n is not None]


def test_a_loop_of_scalar_operations_is_per_operation_cost():
    x = np.linspace(0.1, 1.0, 200)

    def loop(v):
        total = 0.0
        for i in range(200):
            total = total + v[i] * 2.0
        return total

    grad = vjp(loop, 0, 1.0)
    parts = decompose(grad, [x])
    assert parts.nodes >= 400 and parts.operations <= 4  # getitem, multiply, add: repeated
    ordered(parts)
    assert 0 < parts.work_s
    # on one-element values, the fixed cost each VJP is set against is timed on values of the
    # node's own ranks (all scalars here): the same computation, so no data work is assumed
    timed = _timed_run(grad, [x])
    assert timed._tiny and all(set(ranks) == {0} for _, ranks in timed._tiny)
    assert set(op_names(timed)) >= {"numpy.add", "numpy.multiply"}


def test_work_on_large_arrays_scales_with_data():
    a = np.random.default_rng(0).standard_normal((400, 400))

    def big(m):
        return np.sum(np.sin(m) * m)

    grad = vjp(big, 0, 1.0)
    parts = decompose(grad, [a])
    assert parts.nodes <= 4 and parts.operations == parts.nodes
    ordered(parts)
    # 160,000 elements: each VJP's fixed cost is timed on one element per axis of the same ranks
    timed = _timed_run(grad, [a])
    assert None not in timed.fixed
    assert {ranks for _, ranks in timed._tiny} == {(0, 0, 2), (2, 2, 2), (2, 2, 2, 2)}  # sum, sin, product
    small = dec._one(a)
    assert small.shape == (1, 1) and small.dtype == a.dtype and small.flags.c_contiguous
    assert dec._one(2.5) == 2.5


def test_calibration_is_positive_and_cached():
    c = calibration()
    assert c.timer_s >= 0 and c.small_pullback_s > 0 and c.small_work_s > 0 and c.rule_call_s > 0
    assert calibration() is c


def test_source_lines():
    def three():
        a = 1
        return a

    assert source_lines(three) == 3 and source_lines(np.sum) is None


def test_each_operations_own_fixed_cost_is_not_counted_as_work_on_data():
    # small matrices: np.outer's and np.dot's VJPs cost several times a ufunc's before they touch
    # their data; that cost, timed on one-element values of the same ranks, is not "work on data"
    rng = np.random.default_rng(1)
    u, v = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))

    def outers(a, b):
        y = np.outer(a[0], b[0])
        for k in range(1, 8):
            y = y + np.outer(a[k], b[k])
        return np.sum(y)

    grad = vjp(outers, (0, 1), 1.0)
    parts = decompose(grad, [u, v])
    assert parts.operations >= 3
    ordered(parts)
    # each outer product's own fixed cost is measured (on 1x1 cotangents and 1-vectors), once for
    # the eight of them; the indexing nodes, whose VJPs need their real shapes, have none
    timed = _timed_run(grad, [u, v])
    outer = by_name(timed, "numpy.outer", "fixed")
    assert len(outer) == 8 and None not in outer
    assert [ranks for kind, ranks in timed._tiny if kind[1].name == "numpy.outer"] == [(2, 2, 1, 1)]
    assert by_name(timed, "_pb_getitem", "fixed") == [None] * 16


def test_an_operation_that_cannot_run_on_one_element_values_keeps_the_generic_constant():
    a = np.random.default_rng(2).standard_normal((300, 300))

    def reshaped(m):
        return np.sum(np.reshape(m, (900, 100)) ** 2)

    grad = vjp(reshaped, 0, 1.0)
    parts = decompose(grad, [a])
    ordered(parts)
    timed = _timed_run(grad, [a])
    assert by_name(timed, "_pb_reshape", "fixed") == [None]  # decompose sets Calibration.small_work_s against it
    assert None not in by_name(timed, "numpy.power", "fixed")


def test_decompose_sets_each_nodes_own_fixed_cost_or_the_generic_one_and_counts_each_operation_once(monkeypatch):
    us = 1e-6
    cal = Calibration(timer_s=1 * us, small_pullback_s=2 * us, rule_call_s=3 * us, small_work_s=1.5 * us,
                      call_s=0.5 * us)
    a, b = ("a", (3,)), ("b", (2,))

    def run(scale, chain=2):
        return SimpleNamespace(times=[11 * us * scale, 5 * us, 5 * us], work=[9 * us, 4 * us, 4 * us],
                               fixed=[3 * us, None, None], lean=[0.5, 1.0, 1.0], ops=[(a, 1), (b, 2), (b, 2)],
                               kinds={a, b}, chain=chain,
                               fwd=[7 * us, None, 5 * us], fwd_fixed=[2 * us, None, 2 * us])

    runs = [run(3.0), run(1.0), run(2.0)]  # the fastest run (by its nodes' times) is the one kept
    clock = Clock()
    monkeypatch.setattr(dec, "calibration", lambda: cal)
    monkeypatch.setattr(dec, "_timed_run", lambda grad, args, forwards=False: runs.pop(0))
    monkeypatch.setattr(dec, "_perf", clock)
    plain = clock.charge(lambda: None, 4 * us)  # the plain gradient, timed between the runs
    parts = decompose(plain, [], runs=3)
    assert (parts.nodes, parts.operations) == (3, 2)
    # less the timer's 1 µs each: times 10 + 4 + 4, work 8 + 3 + 3, fixed 2 (own) and 1.5 (generic) x2
    assert parts.pullback_s == pytest.approx(18 * us) and parts.work_s == pytest.approx(14 * us)
    assert parts.vector_pullback_s == pytest.approx((8 - 2) * us + 2 * (3 - 1.5) * us)
    assert parts.lean_pullback_s == pytest.approx(0.5 * 6 * us + 2 * 1.5 * us)
    # a: min(2, one call of 0.5); b (two nodes, one operation): min(1.5, two calls of 0.5), once
    assert parts.closed_fixed_s == pytest.approx(0.5 * us + 1.0 * us)
    assert parts.chain == 2
    # a hand-written forward (the first run's forwards, re-run): each node's forward less the timer
    # and its one-element cost (a: 6 - 1; b's second node: 4 - 1), the node that cannot be re-run
    # its pullback's data work (3 - 1.5); then each operation's one-element cost once, at most one
    # NumPy call (a: 1 -> 0.5; b: 0.5)
    assert parts.lean_forward_s == pytest.approx((5 + 1.5 + 3) * us + (0.5 + 0.5) * us)
    # a recurrence (its critical path, 3 nodes, repeats an operation): b's per-call cost once per step
    runs[:] = [run(1.0, chain=3)]
    serial = decompose(plain, [], runs=1)
    assert serial.chain == 3 and serial.closed_fixed_s == pytest.approx(0.5 * us + 2 * 1.0 * us)
    assert serial.lean_forward_s == pytest.approx((5 + 1.5 + 3) * us + 3 * 0.5 * us)
    # a scalar operation (a's output of shape ()) costs a closed form one Python float operation,
    # and has no data work, in its pullback or its forward: what its timings show above the
    # one-element measurement is noise
    cal = Calibration(timer_s=1 * us, small_pullback_s=2 * us, rule_call_s=3 * us, small_work_s=1.5 * us,
                      call_s=0.5 * us, scalar_s=0.05 * us)
    runs[:] = [run(1.0, chain=3)]
    runs[0].ops[0] = (("a", ()), 1)
    scalars = decompose(plain, [], runs=1)
    assert scalars.closed_fixed_s == pytest.approx(0.05 * us + 2 * 1.0 * us)
    assert scalars.vector_pullback_s == pytest.approx(2 * (3 - 1.5) * us)
    assert scalars.lean_forward_s == pytest.approx((1.5 + 3) * us + (0.05 + 0.5 + 0.5) * us)
    # in a map, scalar operations become NumPy calls over arrays: a call each, not a float operation
    runs[:] = [run(1.0, chain=2)]
    runs[0].ops[0] = (("a", ()), 1)
    mapped = decompose(plain, [], runs=1)
    assert mapped.closed_fixed_s == pytest.approx(0.5 * us + 1.0 * us)
    assert mapped.lean_forward_s == pytest.approx((1.5 + 3) * us + (0.5 + 0.5) * us)

    # at the replay's pace: the parts scaled by its time over the plain gradient's, within 0.5-2x
    for derived, pace in ((6 * us, 1.5), (40 * us, 2.0), (1 * us, 0.5)):
        runs[:] = [run(1.0)]
        paced = decompose(plain, [], runs=1, derived_s=derived)
        assert paced.pullback_s == pytest.approx(18 * us * pace) and paced.work_s == pytest.approx(14 * us * pace)


def test_a_closed_form_needs_no_more_data_work_than_the_forward_of_an_elementwise_operation():
    # maximum's VJP builds a tie mask and divide's y-gradient is -g * ans / y: several passes for
    # a forward of one; a closed-form pullback of them does about one pass per argument
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((300, 300)), rng.uniform(1.0, 2.0, (300, 300))

    def passes(x, y):
        return np.sum(np.maximum(x, y) / y)

    grad = vjp(passes, (0, 1), 1.0)
    ordered(decompose(grad, [a, b]))
    timed = _timed_run(grad, [a, b])
    assert sorted(op_names(timed)) == ["numpy.add.reduce", "numpy.divide", "numpy.maximum"]
    assert all(0.0 <= share <= 1.0 for share in timed.lean)
    assert [d for _, d in timed.ops] == [1, 2, 2]  # the sum, then divide and maximum: two arguments each


def test_an_elementwise_nodes_share_is_its_forwards_data_work_per_argument_over_its_vjps(monkeypatch):
    # on a clock where work costs one unit per element: divide's forward reads 90,000 elements
    # per argument (less the one-element forward's 1), its VJPs are given 6 passes of 90,000
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((300, 300)), rng.uniform(1.0, 2.0, (300, 300))
    [node] = [n for n in recorded(lambda x, y: np.sum(x / y), (0, 1), [a, b]) if introspect.name(n) == "numpy.divide"]
    clock = Clock()
    monkeypatch.setattr(dec, "_perf", clock)
    prim = introspect.primitive(node)
    real = prim.fwd
    monkeypatch.setattr(prim, "fwd", lambda x, y: clock.charge(real, np.size(x))(x, y))
    share = dec._Timed()._lean(node, np.ones((300, 300)), 6 * 90000.0)
    assert share == pytest.approx((90000 - 1) * 2 / (6 * 90000))
    assert dec._Timed()._lean(node, np.ones((300, 300)), 0.5 * 90000.0) == 1.0  # never more than its VJPs


def test_a_matrix_products_reverse_is_work_any_rule_does():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((200, 200)), rng.standard_normal((200, 200))

    grad = vjp(lambda x, y: np.sum(x @ y), (0, 1), 1.0)
    ordered(decompose(grad, [a, b]))
    # the two products are kept whole (the sum's reverse, a broadcast, is next to nothing)
    timed = _timed_run(grad, [a, b])
    assert by_name(timed, "numpy.matmul", "lean") == [1.0]


def test_a_rule_reuses_the_forwards_factorization_of_a_solve_with_one_right_hand_side():
    # the pullback of solve(a, y) factorizes a's transpose again; a rule keeps the forward's factor
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 300)) + 300 * np.eye(300)
    y = rng.standard_normal(300)
    one = vjp(lambda m, v: np.sum(np.linalg.solve(m, v)), (0, 1), 1.0)
    ordered(decompose(one, [a, y]))
    [share] = by_name(_timed_run(one, [a, y]), "_pb_solve", "lean")
    assert 0.0 <= share <= 1.0  # measured: see the next test
    # 300 right-hand sides: their triangular solves are work any rule does; the solve counts whole
    b = rng.standard_normal((300, 300))
    many = vjp(lambda m, v: np.sum(np.linalg.solve(m, v)), 0, 1.0)
    ordered(decompose(many, [a, b]))
    assert by_name(_timed_run(many, [a, b]), "_pb_solve", "lean") == [1.0]


def test_a_solves_share_is_its_pullback_less_the_forward_timed_each_at_its_fastest(monkeypatch):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((30, 30)) + 30 * np.eye(30)
    y = rng.standard_normal(30)
    [both] = [n for n in recorded(lambda m, v: np.sum(np.linalg.solve(m, v)), (0, 1), [a, y]) if solves(n)]
    [b_only] = [n for n in recorded(lambda v: np.sum(np.linalg.solve(a, v)), 0, [y]) if solves(n)]
    clock = Clock()
    monkeypatch.setattr(cf, "_perf", clock)
    # the forward (a factorization and a solve) 4 units; the pullback's solve with a's transpose
    # 5 (it factorizes again), a's gradient (an outer product) 1; each first call preempted by 100
    monkeypatch.setattr(linalg, "solve", clock.charge(linalg.solve, 4.0, preempted=100.0))
    # (a's transpose solved with NumPy's own: the rule's solves through linalg.solve, charged as the forward)
    monkeypatch.setattr(linalg, "_solve_gb", clock.charge(lambda g, m, v: np.linalg.solve(m.T, g), 5.0, preempted=100.0))
    monkeypatch.setattr(linalg, "_solve_da_of", clock.charge(linalg._solve_da_of, 1.0))
    g = np.ones(30)
    # the forward's time comes off (a solve node's VJP work is not measured: its rule times it)
    assert cf.closed_form_share(both, g, None) == pytest.approx((5 + 1 - 4) / (5 + 1))
    assert cf.closed_form_share(b_only, g, None) == pytest.approx((5 - 4) / 5)
    # many right-hand sides, or a triangular a: whole, and nothing to time
    reads = clock.reads
    pb_solve = introspect.kind(both)
    many = (pb_solve, both[1], np.ones((30, 2)), a, np.ones((30, 2)))
    triangular = (pb_solve, both[1], both[2], np.tril(a), y)
    assert cf.closed_form_share(many, np.ones((30, 2)), None) == 1.0
    assert cf.closed_form_share(triangular, g, None) == 1.0
    assert clock.reads == reads


def test_a_rule_needs_only_the_inverse_of_a_cholesky_factor():
    # a Gaussian log-likelihood: its closed form is K^-1 = L^-T L^-1 from the forward's factor,
    # not the generic Cholesky pullback's triangular product and two solves
    rng = np.random.default_rng(6)
    A = rng.standard_normal((200, 200))
    K, y = A @ A.T + 200 * np.eye(200), rng.standard_normal(200)

    def loglik(k, v):
        L = np.linalg.cholesky(k)
        z = np.linalg.solve(L, v)
        return -0.5 * np.dot(z, z) - np.sum(np.log(np.diagonal(L)))

    grad = vjp(loglik, (0, 1), 1.0)
    ordered(decompose(grad, [K, y]))
    timed = _timed_run(grad, [K, y])
    [share] = by_name(timed, "numpy.linalg.cholesky", "lean")
    assert 0.0 <= share <= 1.0  # measured: see the next test
    assert by_name(timed, "_pb_solve", "lean") == [1.0]  # a solve with the triangular factor: whole


def test_a_cholesky_nodes_share_is_the_closed_forms_time_at_its_fastest_over_the_pullbacks(monkeypatch):
    rng = np.random.default_rng(6)
    A = rng.standard_normal((20, 20))
    K = A @ A.T + 20 * np.eye(20)
    [node] = [n for n in recorded(lambda k: np.sum(np.linalg.cholesky(k)), 0, [K])
              if introspect.name(n) == "numpy.linalg.cholesky"]
    clock = Clock()
    blas, lapack = linalg.scipy_linalg()
    potri = clock.charge(lapack.get_lapack_funcs("potri", (introspect.output(node),)), 2.0, preempted=100.0)
    fake = SimpleNamespace(get_lapack_funcs=lambda name, arrays: potri)
    monkeypatch.setattr(cf, "_perf", clock)
    monkeypatch.setattr(linalg, "scipy_linalg", lambda: (blas, fake))
    g = np.ones((20, 20))
    assert cf.closed_form_share(node, g, 5.0) == pytest.approx(2.0 / 5.0)
    assert cf.closed_form_share(node, g, 1.0) == 1.0  # never more than the pullback
    assert cf.closed_form_share(node, g, None) == 1.0 and cf.closed_form_share(node, g, 0.0) == 1.0  # not known


def test_a_closed_forms_per_call_cost_counts_each_operation_once_and_at_most_a_numpy_call_per_argument():
    x = np.random.default_rng(3).standard_normal(40)

    def mapped(v):
        s = 0.0
        for i in range(40):
            s = s + np.sin(v[i]) * 1.01  # independent elements, summed: a map and a reduction
        return s

    cal = calibration()
    parts = decompose(vjp(mapped, 0, 1.0), [x])
    assert parts.nodes >= 120 and parts.operations <= 4 and parts.chain <= parts.operations
    ordered(parts)
    # 120 nodes of per-call cost in the VJPs, but a closed form pays it once per distinct operation
    # (the read, sin, the product: one differentiated argument each), no more than one NumPy call each
    assert 0 < parts.closed_fixed_s <= parts.operations * cal.call_s * 1.0001


def test_a_recurrences_closed_form_pays_its_per_call_cost_once_per_step():
    x = np.random.default_rng(3).standard_normal(4)

    def chain(v):
        for _ in range(40):
            v = np.sin(v) * 1.01  # each step needs the last: no vectorised forward or pullback
        return np.mean(v)

    cal = calibration()
    parts = decompose(vjp(chain, 0, 1.0), [x])
    assert parts.nodes >= 81 and parts.operations <= 4 and parts.chain >= 80
    ordered(parts)
    assert parts.operations * cal.call_s * 1.0001 < parts.closed_fixed_s <= parts.nodes * cal.call_s * 1.0001


def test_an_operation_is_a_kind_of_node_and_its_output_shape():
    # a loop repeats one operation (its output's shape too); straight-line code applies a kind to
    # other shapes, each a call of its own in a closed form (mlp_dict's two products and two biases)
    rng = np.random.default_rng(5)
    W1, W2, X = rng.standard_normal((8, 6)), rng.standard_normal((6, 1)), rng.standard_normal((20, 8))

    def two_layers(a, b):
        return np.sum(np.tanh(X @ a) @ b)

    def loop(v):
        for _ in range(10):
            v = np.tanh(v @ W2[:1, :1] + 0.1)
        return np.sum(v)

    straight = decompose(vjp(two_layers, (0, 1), 1.0), [W1, W2])
    assert straight.nodes == 4 and straight.operations == 4  # two products of other shapes: two operations
    repeated = decompose(vjp(loop, 0, 1.0), [rng.standard_normal((5, 1))])
    assert repeated.nodes == 31 and repeated.operations == 4  # product, add, tanh (x10), the sum


def test_the_replay_measures_what_the_floors_zero_gradients_cost(monkeypatch):
    from adcli.profiler import replay
    from adcli.profiler.replay import _floor_pullback

    def f(w, b, X):
        return np.sum(X @ w + b)

    rng = np.random.default_rng(4)
    args = [rng.standard_normal(30), 0.5, rng.standard_normal((50, 30))]
    timed = []
    real = replay.stable_median

    def spy(fn, budget):
        timed.append(fn())  # what is timed: the minimal rule's pullback alone, its zero gradients
        return real(fn, budget)

    monkeypatch.setattr(replay, "stable_median", spy)
    seconds = _floor_pullback(f, args, {}, (0, 1))
    assert seconds is not None and seconds > 0
    [(gw, gb, gX)] = timed
    # X, not differentiated in the sample: a thunk of its zeros, made only where a call traces it
    assert gw.shape == (30,) and not gw.any() and gb == 0.0 and callable(gX)
    assert gX().shape == (50, 30) and not gX().any()
    assert _floor_pullback(lambda *a: 1 / 0, args, {}, (0,)) is None  # a sample that no longer runs: not known


def test_an_operations_data_work_is_clipped_at_zero_as_a_whole_not_node_by_node():
    # 2000 scalar additions whose work and fixed cost are equal but for timing noise: node by
    # node, the positive half of the noise summed to "data work"; per operation it cancels
    from adcli.profiler.decompose import _per_operation

    noise = np.random.default_rng(0).normal(0.0, 1e-6, 2000)
    assert np.maximum(noise, 0.0).sum() > 7e-4  # (what clipping node by node made of it)
    assert _per_operation(noise - noise.mean(), ["add"] * 2000).sum() == pytest.approx(0.0, abs=1e-12)
    # an operation with real work keeps all of it, shared as its nodes' positive parts
    got = _per_operation(np.array([3.0, 1.0, -1.0, 2.0]), ["a", "a", "a", "b"])
    assert got.tolist() == pytest.approx([2.25, 0.75, 0.0, 2.0])


def test_a_lean_forward_leaves_out_the_python_around_the_recorded_operations():
    # one recorded operation inside a helper that runs plain Python around it: the forward a rule
    # needs is the operation alone, re-run on its recorded value, never the helper again (checked
    # by counting the helper's runs, not by timing: a busy machine cannot fail it); a recorded
    # operation whose forward cannot be re-run (indexing) is counted without a timing of its own
    x = np.linspace(0.1, 1.0, 8)
    runs = []

    def busy(v):
        runs.append(1)
        return np.sin(v) * 2.0

    def f(v):
        return np.sum(busy(v)[1:])

    grad = vjp(f, 0, 1.0)
    parts = decompose(grad, [x], runs=3)
    assert len(runs) == 2 * 3  # each timed run and each plain run between them: one call of f each
    assert parts.lean_forward_s is not None and parts.lean_forward_s > 0
    timed = _timed_run(grad, [x], forwards=True)
    assert len(runs) == 2 * 3 + 1
    assert len(timed.fwd) == len(timed.ops) == parts.nodes
    names = [op[0][1].name if isinstance(op[0], tuple) else None for op, _ in timed.ops]
    for name, t in zip(names, timed.fwd):
        assert (t is None) == (name is None), (name, t)  # re-run: the primitives' nodes, and only they
    assert any(t is None for t in timed.fwd) and any(t is not None for t in timed.fwd)
