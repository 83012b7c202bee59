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

    parts = decompose(vjp(outers, (0, 1), 1.0), [u, v])
    generic = calibration().small_work_s
    assert parts.operations >= 3
    # with one generic per-call constant the outer products' VJPs (matrix products) on 3x2
    # values would count as work on data; measured per operation, little of it is
    assert parts.vector_pullback_s < 0.35 * parts.work_s, (parts, generic)


def test_an_operation_that_cannot_run_on_one_element_values_keeps_the_generic_constant():
    a = np.random.default_rng(2).standard_normal((300, 300))

    def reshaped(m):
        return np.sum(np.reshape(m, (900, 100)) ** 2)

    parts = decompose(vjp(reshaped, 0, 1.0), [a])
    assert parts.vector_pullback_s > 0.5 * parts.work_s  # 90,000 elements: mostly data, as before


def test_a_closed_form_needs_no_more_data_work_than_the_forward_of_an_elementwise_operation():
    # maximum's VJP builds a tie mask and divide's y-gradient is -g * ans / y: several passes for
    # a forward of one; a closed-form pullback of them does about one pass per argument
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((300, 300)), rng.uniform(1.0, 2.0, (300, 300))

    def passes(x, y):
        return np.sum(np.maximum(x, y) / y)

    parts = decompose(vjp(passes, (0, 1), 1.0), [a, b])
    assert parts.lean_pullback_s < 0.8 * parts.vector_pullback_s, parts


def test_a_matrix_products_reverse_is_work_any_rule_does():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((200, 200)), rng.standard_normal((200, 200))

    parts = decompose(vjp(lambda x, y: np.sum(x @ y), (0, 1), 1.0), [a, b])
    # the sum's reverse (a broadcast) is next to nothing; the two products are kept whole
    assert parts.lean_pullback_s > 0.9 * parts.vector_pullback_s, parts


def test_a_rule_reuses_the_forwards_factorization_of_a_solve_with_one_right_hand_side():
    # the pullback of solve(a, y) factorizes a's transpose again; a rule keeps the forward's factor
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 300)) + 300 * np.eye(300)
    y = rng.standard_normal(300)
    one = decompose(vjp(lambda m, v: np.sum(np.linalg.solve(m, v)), (0, 1), 1.0), [a, y])
    assert one.lean_pullback_s < 0.7 * one.vector_pullback_s, one
    # 300 right-hand sides: their triangular solves are work any rule does; the solve counts whole
    many = decompose(vjp(lambda m, v: np.sum(np.linalg.solve(m, v)), 0, 1.0), [a, rng.standard_normal((300, 300))])
    assert many.lean_pullback_s > 0.9 * many.vector_pullback_s, many


def test_a_rule_needs_only_the_inverse_of_a_cholesky_factor():
    # a Gaussian log-likelihood: its closed form is K^-1 = L^-T L^-1 from the forward's factor,
    # not the generic Cholesky pullback's triangular product and two solves (0.79 of it at
    # n = 200 since the pullback takes BLAS's trsm; 0.6 when it took four products)
    rng = np.random.default_rng(6)
    A = rng.standard_normal((200, 200))
    K, y = A @ A.T + 200 * np.eye(200), rng.standard_normal(200)

    def loglik(k, v):
        L = np.linalg.cholesky(k)
        z = np.linalg.solve(L, v)
        return -0.5 * np.dot(z, z) - np.sum(np.log(np.diagonal(L)))

    parts = decompose(vjp(loglik, (0, 1), 1.0), [K, y])
    assert parts.lean_pullback_s < 0.9 * parts.vector_pullback_s, parts


def test_a_closed_forms_per_call_cost_counts_each_operation_once_and_at_most_a_numpy_call_per_argument():
    x = np.random.default_rng(3).standard_normal(4)

    def chain(v):
        for _ in range(40):
            v = np.sin(v) * 1.01
        return np.mean(v)  # np.mean's VJP on a small array costs several NumPy calls

    cal = calibration()
    parts = decompose(vjp(chain, 0, 1.0), [x])
    assert parts.nodes >= 81 and parts.operations <= 4
    # 81 nodes of per-call cost in the VJPs, but a closed form pays it once per distinct operation
    # (sin, the product, mean: one differentiated argument each), no more than one NumPy call each
    assert 0 < parts.closed_fixed_s <= parts.operations * cal.call_s * 1.0001
    assert parts.closed_fixed_s < 0.2 * (parts.work_s - parts.vector_pullback_s)


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


def test_the_replay_measures_what_the_floors_zero_gradients_cost():
    from adcli.profiler.replay import _floor_pullback

    def f(w, b, X):
        return np.sum(X @ w + b)

    rng = np.random.default_rng(4)
    args = [rng.standard_normal(30), 0.5, rng.standard_normal((50, 30))]
    seconds = _floor_pullback(f, args, {}, (0, 1))
    assert seconds is not None and 0 < seconds < 1e-3
    assert _floor_pullback(lambda *a: 1 / 0, args, {}, (0,)) is None  # a sample that no longer runs: not known
