"""Nodes keep only what their pullbacks read (engine.keep, core.shape_only): the program's
intermediate arrays are freed when it drops them, as with Autograd's VJP closures, and the
gradients are the same to the last bit as with everything kept."""

import tracemalloc

import numpy as np
import pytest

import adcli
from adcli.engine import core
from adcli.engine.keep import params_read
from adcli.engine.registry import UFUNCS
from adcli.profiler.session import Session, run_with_profile_hook


def test_what_a_function_reads_is_read_from_its_bytecode():
    assert params_read(lambda g, ans, x: g * np.cos(x)) == {0, 2}
    assert params_read(lambda g, ans, x: g * ans) == {0, 1}
    assert params_read(lambda g, ans, x, y: g) == {0}

    def captured(g, ans, x):
        return (lambda: x)()

    def star(g, *rest):
        return g

    def sneaky(g, ans, x):
        return locals()["x"]

    assert params_read(captured) is None and params_read(star) is None and params_read(sneaky) is None
    assert params_read(np.sin) is None  # not Python code: everything counts as read


TRIMMED = sorted((u.__name__, p) for u, p in UFUNCS.items()
                 if p.trim is not None and u.nin in (1, 2) and u.signature is None)


def test_most_elementwise_rules_trim_something():
    names = {n for n, _ in TRIMMED}
    assert {"sin", "exp", "add", "subtract", "divide", "tanh", "log"} <= names


def _untrimmed(fn):
    saved = {p: p.trim for _, p in TRIMMED}
    try:
        for p in saved:
            p.trim = None
        return fn()
    finally:
        for p, t in saved.items():
            p.trim = t


@pytest.mark.parametrize("name, prim", TRIMMED, ids=[n for n, _ in TRIMMED])
def test_gradients_are_bit_identical_to_keeping_everything(name, prim):
    ufunc = getattr(np, name)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 0.8, (20, 20))  # 400 elements: over core._SHAPE_ONLY_MIN
    y = rng.uniform(0.3, 0.9, (20,))  # broadcast against x
    with np.errstate(all="ignore"):
        if ufunc.nin == 1:
            cases = [(lambda a: np.sum(ufunc(a) * 1.5), 0, (x,))]
        elif name == "ldexp":  # an integer exponent, not differentiable
            cases = [(lambda a, b: np.sum(ufunc(a, b) * 1.5), 0, (x, rng.integers(-2, 3, 20)))]
        else:
            cases = [(lambda a, b: np.sum(ufunc(a, b) * 1.5), nums, (x, y)) for nums in (0, 1, (0, 1))]
            cases.append((lambda a, b: np.sum(ufunc(b, a) * 1.5), (0, 1), (x, y)))
        for f, nums, args in cases:
            mine = adcli.value_and_grad(f, argnums=nums)(*args)
            full = _untrimmed(lambda: adcli.value_and_grad(f, argnums=nums)(*args))
            for m, r in zip(np.atleast_1d(mine[1]) if nums == 0 or nums == 1 else mine[1],
                            np.atleast_1d(full[1]) if nums == 0 or nums == 1 else full[1]):
                np.testing.assert_array_equal(m, r)


def test_a_loop_of_additions_does_not_keep_every_step():
    x = np.ones(100_000)  # 800 kB

    def f(v):
        for _ in range(30):
            v = v + 1.0
        return np.sum(v)

    g = adcli.grad(f)
    g(x)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = g(x)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out, np.ones_like(x))
    assert peak < 6 * x.nbytes  # not 30 steps' worth: each step is freed when the next is made


def test_a_profiler_sees_every_output_kept():
    x = np.linspace(0.1, 1.0, 400)
    session = Session()
    kept = []

    def f(v):
        w = np.sin(v) + v
        kept.extend(node for node in w.tape.nodes if node)
        return np.sum(w)

    run_with_profile_hook(session, lambda: adcli.grad(f)(x))
    assert all(node[3] is not None for node in kept if node[0] in (core.pb_unary, core.pb_binary))
    kept.clear()
    adcli.grad(f)(x)  # no profiler: sin's and add's outputs are not kept, add's operands are stand-ins
    unary, binary = [n for n in kept if n[0] is core.pb_unary], [n for n in kept if n[0] is core.pb_binary]
    assert unary[0][3] is None and unary[0][4] is not None
    assert binary[0][3] is None and binary[0][4].strides == (0,) and binary[0][5].strides == (0,)


def test_a_parameter_read_for_its_shape_only_is_not_counted():
    from adcli.engine.keep import shape_read, vjp_reads

    vjp = shape_read("x")(lambda g, ans, x, y: g * y + 0 * np.size(x))
    assert params_read(vjp) == {0, 3}
    assert vjp_reads((None, vjp)) == (frozenset(), frozenset({0, 3}))
    assert vjp_reads((lambda g, *rest: g,)) is None


def _where_and_product(v, w):
    m = np.where(v > 0.5, v * w, -v)  # where: keeps its mask; the product keeps w for v's cotangent
    return np.sum(np.sin(m) * np.linspace(1.0, 2.0, m.size))


def test_general_nodes_keep_what_their_vjps_read_and_give_the_same_gradients():
    x, w = np.linspace(0.1, 1.0, 400), np.linspace(2.0, 3.0, 400)
    kept = []

    def f(v, w):
        out = _where_and_product(v, w)
        kept.extend(node for node in out.tape.nodes if node)
        return out

    g = adcli.grad(f, argnums=(0, 1))(x, w)
    where = [n for n in kept if n[0] is core.pb_general and n[1].name == "numpy.where"][0]
    _, _, _, ans, (mask, a, b), _ = where
    assert ans is None and mask.dtype == bool and a.strides == (0,) and b.strides == (0,)
    product = [n for n in kept if n[0] is core.pb_binary and n[1].name == "numpy.multiply"][0]
    assert product[4].strides != (0,) and product[5].strides != (0,)  # both traced: each VJP reads the other
    kept.clear()
    only_v = adcli.grad(f)(x, w)
    product = [n for n in kept if n[0] is core.pb_binary and n[1].name == "numpy.multiply"][0]
    assert product[4].strides == (0,) and product[5].strides != (0,)  # v's VJP reads w, not v
    # the same gradients to the last bit with everything kept (as under a profiler)
    prims = [p for p in {n[1] for n in kept if n[0] in (core.pb_general, core.pb_binary)}]
    saved = {p: (p.trim, p.reads_each) for p in prims}
    try:
        for p in prims:
            p.trim, p.reads_each = None, None
        full = adcli.grad(f, argnums=(0, 1))(x, w)
        full_v = adcli.grad(f)(x, w)
    finally:
        for p, (t, r) in saved.items():
            p.trim, p.reads_each = t, r
    for a, b in zip(g + (only_v,), full + (full_v,)):
        np.testing.assert_array_equal(a, b)
