"""The tape and the reverse pass (adcli/engine/tape.py) on plain Python floats and hand-made nodes.

The graph used throughout (leaves a, b, c; c is never used on a differentiable path):

    0  a            leaf
    1  b            leaf
    2  c            leaf
    3  u = a * b    (shared subexpression: used by 4, 5 and twice by 6)
    4  v = u + a
    5  w = sin(c)   (a branch the output does not use)
    6  s = u * u    (one value used twice by the same node)
    7  out = v + s

    out = a*b + a + (a*b)**2
    d out/da = b + 1 + 2*a*b*b,  d out/db = a + 2*a*a*b,  d out/dc = nothing
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from pathlib import Path

import pytest

from adcli.engine import tape as tape_mod
from adcli.engine.accumulate import Accumulator
from adcli.engine.tape import ClosedTapeError, SumAccumulator, Tape, backward
from tests.support.fresh import fresh_python

TAPE_FILE = Path(tape_mod.__file__)


# --- hand-made pullbacks: each node is (pullback, ...whatever it needs) ---------------------

CALLS: list = []


def pb_add(node, g, acc):
    _, a, b = node
    CALLS.append(("add", a, b))
    acc.add(a, g)
    acc.add(b, g)


def pb_mul(node, g, acc):
    _, a, b, av, bv = node
    CALLS.append(("mul", a, b))
    acc.add(a, g * bv)
    acc.add(b, g * av)


def pb_sin(node, g, acc):
    _, a, av = node
    CALLS.append(("sin", a))
    acc.add(a, g * math.cos(av))


def build(a: float, b: float, c: float):
    """Record the graph of the module docstring on a fresh tape; return (tape, out index)."""
    t = Tape()
    ia, ib, ic = t.leaf(), t.leaf(), t.leaf()
    u = a * b
    t.nodes.append((pb_mul, ia, ib, a, b))  # 3
    t.nodes.append((pb_add, 3, ia))  # 4: v = u + a
    t.nodes.append((pb_sin, ic, c))  # 5: w = sin(c), unused
    t.nodes.append((pb_mul, 3, 3, u, u))  # 6: s = u * u
    t.nodes.append((pb_add, 4, 6))  # 7: out = v + s
    return t, 7


def expected(a, b):
    return b + 1.0 + 2.0 * a * b * b, a + 2.0 * a * a * b


@pytest.fixture(autouse=True)
def _clear_calls():
    CALLS.clear()


@pytest.mark.parametrize("acc_cls", [SumAccumulator, Accumulator])
@pytest.mark.parametrize("a,b,c", [(1.5, -0.5, 0.3), (2.0, 3.0, -1.0), (0.0, 0.0, 0.0)])
def test_backward_hand_built_graph(acc_cls, a, b, c):
    t, out = build(a, b, c)
    acc = acc_cls(len(t.nodes))
    acc.grads[out] = 1.0
    backward(t.nodes, acc, out)
    da, db = expected(a, b)
    assert acc.grads[0] == pytest.approx(da, rel=1e-14, abs=1e-14)
    assert acc.grads[1] == pytest.approx(db, rel=1e-14, abs=1e-14)
    assert acc.grads[2] is None  # the leaf c gets no gradient at all (not even 0.0)


def test_backward_matches_finite_differences():
    a, b, c = 0.7, -1.3, 2.0

    def f(a, b):
        u = a * b
        return (u + a) + u * u

    t, out = build(a, b, c)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = 1.0
    backward(t.nodes, acc, out)
    h = 1e-6
    assert acc.grads[0] == pytest.approx((f(a + h, b) - f(a - h, b)) / (2 * h), rel=1e-7)
    assert acc.grads[1] == pytest.approx((f(a, b + h) - f(a, b - h)) / (2 * h), rel=1e-7)


def test_each_reachable_pullback_runs_once_in_reverse_order_and_unused_branch_never():
    t, out = build(1.0, 2.0, 3.0)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = 1.0
    backward(t.nodes, acc, out)
    # node 7, then 6, then 4, then 3 (node 5, the unused branch, is skipped)
    assert CALLS == [("add", 4, 6), ("mul", 3, 3), ("add", 3, 0), ("mul", 0, 1)]


def test_shared_subexpression_gets_complete_cotangent_before_its_pullback():
    # u (node 3) receives from v (1.0) and twice from s (u each): its pullback must see the sum.
    seen = {}

    def spy_mul(node, g, acc):
        seen["g"] = g
        pb_mul(node, g, acc)

    a, b = 1.5, 2.0
    t, out = build(a, b, 0.0)
    _, ia, ib, av, bv = t.nodes[3]
    t.nodes[3] = (spy_mul, ia, ib, av, bv)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = 1.0
    backward(t.nodes, acc, out)
    u = a * b
    assert seen["g"] == 1.0 + 2.0 * u


def test_consumed_intermediate_slots_are_released_leaves_kept():
    t, out = build(1.0, 2.0, 3.0)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = 1.0
    backward(t.nodes, acc, out)
    assert acc.grads[3:] == [None] * 5
    assert acc.grads[0] is not None and acc.grads[1] is not None


def test_backward_from_an_intermediate_node_ignores_later_nodes():
    # Start at v (node 4) = a*b + a: d/da = b + 1, d/db = a.
    a, b = 3.0, -2.0
    t, _ = build(a, b, 0.0)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[4] = 1.0
    backward(t.nodes, acc, 4)
    assert acc.grads[0] == b + 1.0
    assert acc.grads[1] == a
    assert [c[0] for c in CALLS] == ["add", "mul"]


def test_seed_scales_the_gradient_linearly():
    a, b = 0.5, 1.25
    t, out = build(a, b, 0.0)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = -3.0
    backward(t.nodes, acc, out)
    da, db = expected(a, b)
    assert acc.grads[0] == pytest.approx(-3.0 * da)
    assert acc.grads[1] == pytest.approx(-3.0 * db)


def test_unused_branch_reaches_its_leaf_when_it_is_the_output():
    c = 0.4
    t, _ = build(1.0, 1.0, c)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[5] = 1.0
    backward(t.nodes, acc, 5)
    assert acc.grads[2] == pytest.approx(math.cos(c))
    assert acc.grads[0] is None and acc.grads[1] is None


def test_output_is_a_leaf():
    t = Tape()
    i = t.leaf()
    acc = SumAccumulator(1)
    acc.grads[i] = 2.5
    backward(t.nodes, acc, i)
    assert acc.grads == [2.5]


def test_zero_cotangent_still_propagates():
    # 0.0 is a cotangent (only None means "nothing flowed"), so the pullback must run.
    t, out = build(1.0, 2.0, 3.0)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = 0.0
    backward(t.nodes, acc, out)
    assert acc.grads[0] == 0.0 and acc.grads[1] == 0.0
    assert len(CALLS) == 4


def test_value_used_twice_by_one_node_accumulates_both_shares():
    # s = x * x: d s/dx = 2x
    t = Tape()
    i = t.leaf()
    t.nodes.append((pb_mul, i, i, 3.0, 3.0))
    acc = SumAccumulator(2)
    acc.grads[1] = 1.0
    backward(t.nodes, acc, 1)
    assert acc.grads[0] == 6.0


def test_long_chain():
    # y_{k+1} = y_k * 1.01, 2000 times: d/dx = 1.01**2000, and no recursion limit is hit.
    t = Tape()
    t.leaf()
    n = 2000
    for k in range(n):
        t.nodes.append((pb_scale, k, 1.01))
    acc = SumAccumulator(n + 1)
    acc.grads[n] = 1.0
    backward(t.nodes, acc, n)
    assert acc.grads[0] == pytest.approx(1.01**n, rel=1e-10)


def pb_scale(node, g, acc):
    _, a, k = node
    acc.add(a, g * k)


def test_sum_accumulator_adds():
    acc = SumAccumulator(2)
    assert acc.grads == [None, None]
    acc.add(0, 1.5)
    acc.add(0, 2.0)
    acc.add(1, -1.0)
    assert acc.grads == [3.5, -1.0]


def test_leaf_indices_are_sequential():
    t = Tape()
    assert [t.leaf(), t.leaf()] == [0, 1]
    t.nodes.append((pb_add, 0, 1))
    assert t.leaf() == 3
    assert t.nodes[3] is None


# --- closing ------------------------------------------------------------------------------


def test_closed_tape_refuses_new_nodes():
    t, out = build(1.0, 2.0, 3.0)
    t.close()
    with pytest.raises(ClosedTapeError, match="after its gradient computation finished"):
        t.nodes.append((pb_add, 0, 1))
    with pytest.raises(ClosedTapeError):
        t.leaf()


def test_closed_tape_keeps_its_nodes_and_can_still_be_read_backward():
    t, out = build(1.0, 2.0, 3.0)
    before = list(t.nodes)
    t.close()
    assert list(t.nodes) == before
    acc = SumAccumulator(len(t.nodes))
    acc.grads[out] = 1.0
    backward(t.nodes, acc, out)
    assert acc.grads[0] == pytest.approx(expected(1.0, 2.0)[0])


def test_closed_tape_error_is_a_runtime_error():
    t = Tape()
    t.close()
    with pytest.raises(RuntimeError):
        t.leaf()


def test_tape_module_does_not_import_numpy():
    # Load tape.py on its own in a fresh interpreter where importing numpy is impossible.
    code = textwrap.dedent(
        f"""
        import importlib.util, sys
        sys.modules["numpy"] = None  # any `import numpy` now raises ImportError
        spec = importlib.util.spec_from_file_location("lone_tape", {str(TAPE_FILE)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        t = mod.Tape()
        i = t.leaf()
        def pb(node, g, acc):
            acc.add(node[1], 2.0 * g)
        t.nodes.append((pb, i))
        acc = mod.SumAccumulator(2)
        acc.grads[1] = 1.5
        mod.backward(t.nodes, acc, 1)
        assert acc.grads[0] == 3.0, acc.grads
        assert "numpy" not in {{k for k, v in sys.modules.items() if v is not None}}
        print("ok")
        """
    )
    assert fresh_python(code, timeout=60).strip() == "ok"


def test_every_node_kind_declares_where_its_output_is():
    """A pullback names a kind of tape node; each declares (core.node_kind) which slot holds the
    value it made, or None. A kind without the declaration would make the profiler under-count
    allocations silently, so output_of raises for it instead."""
    from adcli.engine.core import output_of
    from tests.support.kinds import pullback_kinds

    kinds = pullback_kinds()
    assert len(kinds) >= 12
    undeclared = [f"{f.__module__}.{f.__name__}" for f in kinds if not hasattr(f, "output_at")]
    assert not undeclared

    def undeclared_kind(node, g, acc):
        pass

    with pytest.raises(AttributeError):
        output_of((undeclared_kind, 0))


# --- the visitor: a profiler's hand on the one reverse pass ---------------------------------


def run_pass(a, b, c, start=7, visit=None, seed=1.0):
    t, _ = build(a, b, c)
    acc = SumAccumulator(len(t.nodes))
    acc.grads[start] = seed
    backward(t.nodes, acc, start, visit)
    return t, acc


@pytest.mark.parametrize("start,runs", [(7, [7, 6, 4, 3]), (5, [5]), (4, [4, 3])])
def test_the_visitor_sees_every_node_the_plain_pass_runs_in_its_order_and_changes_nothing(start, runs):
    _, plain = run_pass(1.5, -0.5, 0.3, start)
    plain_calls = list(CALLS)
    CALLS.clear()
    seen = []

    def visit(i, node, g, pullback, acc):
        seen.append((i, pullback, g))
        assert pullback is node[0]
        pullback(node, g, acc)

    t, visited = run_pass(1.5, -0.5, 0.3, start, visit)
    assert CALLS == plain_calls  # the same pullbacks, in the same order
    assert [i for i, _, _ in seen] == runs and len(runs) == len(plain_calls)
    assert visited.grads == plain.grads  # the same gradients, bit for bit, the same slots freed
    assert all(t.nodes[i] is False for i, _, _ in seen)  # each node dropped as the plain pass drops it


def test_the_visitor_gets_each_cotangent_complete_and_consumed():
    got = {}

    def visit(i, node, g, pullback, acc):
        assert acc.grads[i] is None  # consumed before the visitor runs, as before a pullback
        got[i] = g
        pullback(node, g, acc)

    a, b = 1.5, 2.0
    run_pass(a, b, 0.0, visit=visit)
    assert got[3] == 1.0 + 2.0 * a * b  # u's cotangent: every consumer's share already in


def test_a_pass_without_a_visitor_is_the_plain_loop():
    # the hot path tests nothing per node: the visitor is chosen once, before the loops
    tree = ast.parse(textwrap.dedent(inspect.getsource(backward)))
    plain, visited = sorted((n for n in ast.walk(tree) if isinstance(n, ast.For)), key=lambda n: n.lineno)
    assert not any(isinstance(n, ast.Name) and n.id == "visit" for n in ast.walk(plain))
    assert any(isinstance(n, ast.Name) and n.id == "visit" for n in ast.walk(visited))
