"""engine.introspect: what a cost model asks of a recorded node, answered on real tapes; and the
engine's one reverse pass with a visitor, on NumPy arrays (tests/test_tape.py has it on floats)."""

import numpy as np
import pytest

from adcli.engine import hooks, introspect
from adcli.engine.grad import grad, vjp
from adcli.engine.tape import backward
from tests.support.kinds import pullback_kinds
from tests.support.recorder import recording

rng = np.random.default_rng(0)
X, Y, W = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((3, 2))


def f(x, y):
    return np.sum(np.sin(x) * y) + np.mean(x @ W) + x[0, 1]


def nodes_of(fn, args, argnums=(0, 1)):
    """The nodes ``vjp(fn)`` recorded (leaves left out), by name."""
    _, [tape] = recording(lambda: vjp(fn, argnums, 1.0)(*args))
    return {introspect.name(n): n for n in tape.nodes if n is not None}, tape.nodes


def test_a_primitives_node_says_what_it_is_reads_and_made():
    by_name, nodes = nodes_of(f, (X, Y))
    sin, mul, total, mm, getitem = (by_name[k] for k in ("numpy.sin", "numpy.multiply", "numpy.add.reduce",
                                                         "numpy.matmul", "_pb_getitem"))
    assert introspect.primitive(sin).name == "numpy.sin" and introspect.primitive(getitem) is None
    assert introspect.kind(getitem).__name__ == "_pb_getitem"
    assert introspect.operation(sin) == (introspect.kind(sin), introspect.primitive(sin))
    assert introspect.operation(getitem) is introspect.kind(getitem)
    # what it depends on, what it made, what its VJPs read
    assert introspect.parents(sin) == (0,) and introspect.parents(mul) == (nodes.index(sin), 1)
    np.testing.assert_array_equal(introspect.output(sin), np.sin(X))
    ans, x = introspect.reads(sin)
    assert ans is introspect.output(sin) and np.array_equal(x, X)
    assert introspect.reads(getitem) is None
    assert introspect.argnums(mul) == (0, 1) and introspect.argnums(sin) == (0,)
    assert introspect.argnums(total) == (0,) and introspect.argnums(getitem) is None
    assert introspect.data(sin) == (2 * X.size, 2 * X.nbytes) and introspect.data(getitem) is None
    # its forward, run again on the values it was recorded with
    fwd, vals, kwargs = introspect.forward(mm)
    np.testing.assert_array_equal(fwd(*vals, **kwargs), X @ W)
    assert introspect.forward(getitem) is None


def test_a_nodes_kind_of_work_comes_from_its_rules_declarations():
    by_name, _ = nodes_of(f, (X, Y))
    kinds = {k: (introspect.elementwise(n), introspect.generalised(n), introspect.lean(n)) for k, n in by_name.items()}
    assert kinds["numpy.sin"] == (True, False, True)
    assert kinds["numpy.multiply"] == (True, False, True)
    assert kinds["numpy.matmul"] == (False, True, False)  # a generalised ufunc (its signature), not elementwise
    assert kinds["numpy.add.reduce"] == (False, False, True)  # Primitive(lean=True)
    assert kinds["numpy.mean"] == (False, False, True)
    assert kinds["_pb_getitem"] == (False, False, False)
    assert all(introspect.closed_form(n) is None for n in by_name.values())


def test_the_vjp_work_runs_a_nodes_vjps_and_adds_into_nothing():
    by_name, _ = nodes_of(f, (X, Y))
    mul = by_name["numpy.multiply"]
    run = introspect.vjp_work(mul, np.ones((4, 3)))
    assert callable(run) and run() is None
    assert introspect.vjp_work(by_name["_pb_getitem"], 1.0) is None
    # on one-element values: the same operation, its fixed cost
    tiny = introspect.with_values(mul, lambda v: np.ones((1, 1)) if isinstance(v, np.ndarray) else v)
    assert introspect.operation(tiny) == introspect.operation(mul)
    assert [np.shape(v) for v in introspect.reads(tiny)] == [(1, 1)] * 3
    introspect.vjp_work(tiny, np.ones((1, 1)))()
    assert introspect.with_values(by_name["_pb_getitem"], lambda v: v) is None


def test_allocated_counts_the_new_arrays_a_run_of_nodes_made():
    _, nodes = nodes_of(lambda x: np.sum(np.exp(x).T * 2.0), (X,), 0)
    count, size = introspect.allocated(n for n in nodes if n is not None)
    # exp and the product made arrays; the transpose is a view, the sum a number
    assert (count, size) == (2, 2 * X.nbytes)


def test_solve_and_cholesky_declare_what_their_closed_forms_still_do():
    A = rng.standard_normal((30, 30))
    K, b = A @ A.T + 30 * np.eye(30), rng.standard_normal(30)

    def loglik(k, v):
        L = np.linalg.cholesky(k)
        return np.sum(np.linalg.solve(k, v)) + np.sum(L)

    by_name, _ = nodes_of(loglik, (K, b))
    calls = []

    def fastest(fn):  # a clock of the test's own: each call "costs" 1, the engine times nothing itself
        fn()
        calls.append(fn)
        return 1.0

    solve, chol = by_name["_pb_solve"], by_name["numpy.linalg.cholesky"]
    assert introspect.primitive(solve) is None
    assert introspect.closed_form(solve)(np.ones(30), None, fastest) == 0.0  # pullback 1, less the forward's 1
    assert introspect.closed_form(chol)(np.ones((30, 30)), 4.0, fastest) == 0.25  # potri's 1 over the pullback's 4
    assert introspect.closed_form(chol)(np.ones((30, 30)), None, fastest) == 1.0  # the pullback not measured
    assert len(calls) == 3


def test_every_kind_of_node_can_be_asked_for_its_closed_form():
    # a kind declares one (tape.node_kind(closed_form=...)) or None: never missing
    assert all(hasattr(kind, "closed_form") for kind in pullback_kinds())


class Visiting(hooks.Session):
    """Runs each reverse pass with a visitor that notes the nodes it is handed."""

    def __init__(self):
        self.seen = []

    def backward(self, tape, acc, start):
        def visit(i, node, g, pullback, acc):
            self.seen.append((i, introspect.name(node)))
            pullback(node, g, acc)

        backward(tape.nodes, acc, start, visit)


def test_a_gradient_with_a_visitor_is_the_gradient_without_one():
    plain = grad(f, (0, 1))(X, Y)
    session = Visiting()
    hooks.install(session)
    try:
        visited = grad(f, (0, 1))(X, Y)
    finally:
        hooks.uninstall()
    for a, b in zip(plain, visited):
        assert a.tobytes() == b.tobytes()  # bit for bit
    indices = [i for i, _ in session.seen]
    assert indices == sorted(indices, reverse=True) and len(set(indices)) == len(indices)
    by_name, nodes = nodes_of(f, (X, Y))
    assert len(session.seen) == sum(n is not None for n in nodes)  # every node: each is on the output's path


@pytest.mark.parametrize("fn", [lambda x: np.sum(x * x), lambda x: np.sum(np.tanh(x) @ W),
                                lambda x: np.linalg.solve(x[:3] @ x[:3].T + 3 * np.eye(3), x[0]).sum()])
def test_a_visitor_sessions_gradients_are_the_plain_ones(fn):
    session = Visiting()
    hooks.install(session)
    try:
        g = grad(fn)(X)
    finally:
        hooks.uninstall()
    assert session.seen and g.tobytes() == grad(fn)(X).tobytes()
