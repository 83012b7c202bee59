"""The profiling session's bookkeeping on hand-counted programs: which call each primitive,
each array and each stretch of the reverse pass is charged to."""

import threading

import numpy as np
import pytest

import adcli
from adcli.profiler.session import Session, run_with_profile_hook
from adcli.rules import dispatch
from tests.support.fresh import fresh_python


@dispatch
def inner(x):
    return np.sin(x) * 2.0  # two arrays made


@dispatch
def outer(x):
    return np.sum(inner(x) + x)  # one array (the sum), np.sum's value is a number


@dispatch
def interleaved(x):
    y = x * 3.0  # 1 node
    y = inner(y)  # 2 nodes, in inner
    y = y + 1.0  # 1 node
    y = inner(y)  # 2 nodes, in inner
    return np.sum(y * y)  # 2 nodes, np.sum's node in its own call


def nodes_by_function(session):
    out = {}
    stack = list(session.root.children.values())
    while stack:
        node = stack.pop()
        out.setdefault(node.sig.signature.qualname, []).append(node)
        stack.extend(node.children.values())
    return out


def profiled(f, *args):
    session = Session()
    result = run_with_profile_hook(session, lambda: adcli.value_and_grad(f)(*args))
    return session, result


def test_arrays_are_charged_to_the_call_that_made_them_and_counted_once():
    x = np.linspace(0.1, 1.0, 10)
    session, (value, g) = profiled(outer, x)
    np.testing.assert_allclose(g, 2.0 * np.cos(x) + 1.0)
    calls = nodes_by_function(session)
    [o], [i], [s] = calls["outer"], calls["inner"], calls["sum"]
    # forward: sin and the product in inner, the sum of two arrays in outer, a number from np.sum
    assert (i.fwd_allocs, i.fwd_bytes) == (2, 2 * 80)
    assert (o.fwd_allocs, o.fwd_bytes) == (1, 80) and s.fwd_allocs == 0
    # reverse: np.sum's pullback fills the cotangent of outer's sum (charged to outer, which made
    # that value); add hands it on unchanged to inner's product (not a new array); the product's
    # pullback makes the cotangent of sin's value (inner's). The gradient of x (the cotangent add
    # handed on, plus sin's share: a new array) is charged to the function handed to grad.
    assert (o.rev_allocs, o.rev_bytes) == (2, 160)
    assert (i.rev_allocs, i.rev_bytes) == (1, 80)
    assert session.root.rev_allocs == 0 and s.rev_allocs == 0


def test_primitives_and_reverse_time_follow_interleaved_calls():
    x = np.linspace(0.1, 1.0, 5)
    session, (value, g) = profiled(interleaved, x)
    calls = nodes_by_function(session)
    [top], [i], [s] = calls["interleaved"], calls["inner"], calls["sum"]
    assert i.calls == 2 and i.prims == 4 and s.prims == 1 and top.prims == 3
    assert i.rev > 0 and top.rev > 0 and s.rev > 0
    assert session.forward_s > 0 and session.reverse_s > 0 and session.gradients == 1
    # the gradient is the engine's, profiled or not
    np.testing.assert_allclose(g, adcli.grad(interleaved)(x), rtol=0, atol=0)


def test_a_gradient_that_raises_still_counts_its_forward_pass():
    def bad(x):
        inner(x)
        raise ValueError("boom")

    session = Session()
    with pytest.raises(ValueError):
        run_with_profile_hook(session, lambda: adcli.grad(bad)(np.ones(3)))
    [i] = nodes_by_function(session)["inner"]
    assert i.fwd_allocs == 2 and i.prims == 2
    assert session.failed_gradients == 1 and session.gradients == 1 and session.reverse_s == 0


def test_gradients_in_threads_keep_their_own_stretches():
    session = Session()
    x = np.linspace(0.1, 1.0, 10)
    errors = []

    def work():
        try:
            for _ in range(20):
                adcli.grad(outer)(x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def run():
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run_with_profile_hook(session, run)
    assert not errors and session.gradients == 80
    calls = nodes_by_function(session)
    [o], [i] = calls["outer"], calls["inner"]
    assert (o.calls, i.calls) == (80, 80)
    assert (i.prims, i.fwd_allocs, i.rev_allocs) == (160, 160, 80)
    assert (o.fwd_allocs, o.rev_allocs) == (80, 160)


def test_the_reverse_pass_lets_each_cotangent_go_once_it_is_used():
    # The session holds each cotangent it counted only while a slot may hand it back; one that
    # no slot holds is freed as in the engine's own reverse pass. A chain of sines: each sin's
    # pullback makes a new cotangent from the one it got, which nothing holds afterwards.
    import weakref

    from adcli.engine.core import Primitive, apply

    seen: list = []

    def vjp(g, ans, x):
        alive = [r for r in seen if r() is not None]
        seen.append(weakref.ref(g))
        assert len(alive) <= 1, f"{len(alive)} earlier cotangents still alive"
        return g * np.cos(x)

    prim = Primitive("sin_watched", np.sin, vjp)

    def chain(x):
        for _ in range(6):
            x = apply(prim, x)
        return np.sum(x)

    x = np.linspace(0.1, 1.0, 400)
    session, (value, g) = profiled(chain, x)
    expected = np.ones_like(x)
    y = x
    for _ in range(6):
        expected = expected * np.cos(y)  # reversed order does not matter for a product
        y = np.sin(y)
    np.testing.assert_allclose(g, expected)
    assert len(seen) == 6


def test_calls_served_by_another_source_are_counted_apart():
    # the first call's source is the signature's; calls another source serves (a rule registered
    # while the program runs) are counted apart, and the first source keeps the rest
    import datetime

    from adcli.profiler.api import run_meta
    from adcli.profiler.build import build
    from adcli.rules import register, unregister

    x = np.linspace(0.1, 1.0, 4)
    session = Session(every_gradient=True)  # each gradient's calls, counted as they were served
    f = adcli.value_and_grad(lambda v: np.sum(np.cumsum(v)))
    run_with_profile_hook(session, lambda: f(x))
    run_with_profile_hook(session, lambda: f(x))
    register(np.cumsum, ("f64[1d]",), lambda v: (np.cumsum(v), lambda g: (np.cumsum(g[::-1])[::-1],)))
    try:
        run_with_profile_hook(session, lambda: f(x))
    finally:
        unregister(np.cumsum)
    profile, _ = build(session, run_meta(session, ["test"], datetime.datetime.now(), 0, False))
    [stats] = [s for s in profile.signatures if s.signature.qualname == "cumsum"]
    assert stats.calls == 3
    assert stats.served_counts == {"native": 2, "hand-written": 1}
    assert stats.served_by == "native"


def test_a_profiler_loads_the_engines_lazy_scipy_modules_before_the_program_runs():
    """The engine loads scipy.linalg's BLAS and LAPACK wrappers on the first pullback that needs
    them (0.1 s or more); a profiler loads them when it is made, so a profile of one gradient
    does not charge the load to that pullback (a cold gp_lml's solve showed 102 of 107 ms)."""
    code = ("import sys, numpy as np, adcli\n"
            "adcli.grad(lambda x: np.sum(np.linalg.solve(x, np.ones(3))))(np.eye(3) + 1.0)\n"
            "print('scipy.linalg.lapack' in sys.modules)\n"
            "from adcli.profiler.session import Session\n"
            "Session()\n"
            "print('scipy.linalg.lapack' in sys.modules)\n")
    assert fresh_python(code).split() == ["False", "True"]
