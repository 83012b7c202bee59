"""autograd.test_util's checkers, written for adcli: first-order reverse mode only.

``check_grads(f, argnum, modes, order)(*args)`` compares adcli's VJP with central finite
differences the way autograd's checker does: a random input direction v and a random output
cotangent u (NumPy's global generator, so the tests' seeding makes runs repeatable), then
<v, VJP(u)> against <u, (f(x + eps/2 v) - f(x - eps/2 v)) / eps> with eps = 1e-6, accepted
when the absolute or the relative difference is below 1e-6. Reductions are recorded for the
harness: order > 1 is checked at order 1, a 'fwd' mode is checked in reverse mode only; complex
cases and nested differentiation (a gradient of a function that itself calls grad) are skipped.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from adcli.engine.pytree import flatten

from . import _adcli as bridge

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _randn_like(tree):
    return bridge.cotangent_like(tree, lambda shape, dtype: np.random.randn(*shape))


def _inner(a, b) -> float:
    total = 0.0
    for u, v in zip(flatten(a)[0], flatten(b)[0]):
        if u is not None and v is not None and bridge.is_float(u) and bridge.is_float(v):
            total += float(np.sum(np.asarray(u, dtype=float) * np.asarray(v, dtype=float)))
    return total


def _shift(x, direction, step):
    """x + step * direction at the float leaves, keeping each leaf's type and dtype."""
    leaves, unflatten = flatten(x)
    out = []
    for v, d in zip(leaves, flatten(direction)[0]):
        if d is None:
            out.append(v)
        elif type(v) is float:
            out.append(float(v + step * d))
        elif isinstance(v, np.generic):
            out.append(v.dtype.type(v + step * d))
        else:
            out.append(np.asarray(v + step * d, dtype=v.dtype))
    return unflatten(out)


def _substitute(args, argnum, x):
    args = list(args)
    if isinstance(argnum, tuple):
        for i, v in zip(argnum, x):
            args[i] = v
    else:
        args[argnum] = x
    return args


def _describe(x) -> str:
    return ", ".join(f"{type(v).__name__}{list(np.shape(v)) if np.ndim(v) else ''}" for v in flatten(x)[0])


def _check_structure(x, g, name):
    xs, gs = flatten(x)[0], flatten(g)[0]
    problem = None
    if len(xs) != len(gs):
        problem = f"{len(gs)} gradient leaves for {len(xs)} argument leaves"
    else:
        for v, d in zip(xs, gs):
            if not bridge.is_float(v):
                continue
            if d is None or np.shape(d) != np.shape(v):
                problem = f"gradient of shape {np.shape(d) if d is not None else None} for an argument of shape {np.shape(v)}"
            elif isinstance(v, np.ndarray) and np.result_type(d) != v.dtype:
                problem = f"gradient dtype {np.result_type(d)} for an argument of dtype {v.dtype}"
            if problem:
                break
    if problem:
        raise AssertionError(f"Gradient structure check of {name} failed: {problem}")


def check_vjp(f, argnum, args, kwargs):
    ok_before = bridge.STATS["ok"]  # grads that f calls itself are part of this check, not extra work
    try:
        _check_vjp(f, argnum, args, kwargs)
    finally:
        bridge.STATS["ok"] = ok_before


def _check_vjp(f, argnum, args, kwargs):
    name = getattr(f, "__name__", "[unknown name]")
    x = bridge.selected(args, argnum)
    if bridge.is_complex(x):
        bridge.note("skipped", "complex case")
        return
    ans = f(*args, **kwargs)
    if bridge.is_complex(ans):
        bridge.note("skipped", "complex case (complex output)")
        return
    x_v, y_v = _randn_like(x), _randn_like(ans)
    try:
        _, g = bridge.vjp("check_grads", f, argnum, args, kwargs, y_v)
    except bridge.NestedDifferentiation as e:
        e.event["kind"] = "skipped"
        e.event["what"] = "nested differentiation case (gradient of a function that calls grad)"
        return
    _check_structure(x, g, name)
    exact = _inner(x_v, g)
    plus = f(*_substitute(args, argnum, _shift(x, x_v, EPS / 2)), **kwargs)
    minus = f(*_substitute(args, argnum, _shift(x, x_v, -EPS / 2)), **kwargs)
    numeric = (_inner(y_v, plus) - _inner(y_v, minus)) / EPS
    bridge.STATS["checks"] += 1
    if not scalar_close(numeric, exact):
        rel = abs(numeric - exact) / max(abs(numeric), abs(exact), 1e-300)
        raise AssertionError(
            f"Derivative (VJP) check of {name} failed (relative error {rel:.1e}) with arg ({_describe(x)}): "
            f"analytic {exact!r}, numeric {numeric!r}"
        )


def check_grads(f, argnum=0, modes=("fwd", "rev"), order=2):
    argnum = bridge.nums(argnum)
    assert all(m in ("fwd", "rev") for m in modes), modes

    def checker(*args, **kwargs):
        if order > 1:
            bridge.note("reduced", f"order {order} checked at order 1")
        if "fwd" in modes:
            bridge.note(
                "reduced", "fwd mode checked in reverse mode only" if "rev" in modes else "fwd-only check done in reverse mode"
            )
        check_vjp(f, argnum, args, kwargs)

    return checker


def combo_check(fun, *args, **kwargs):
    """check_grads of ``fun`` for every combination of the given argument and keyword values."""

    def _combo_check(*arg_lists, **kwarg_lists):
        keyed = [[(k, v) for v in vs] for k, vs in kwarg_lists.items()]
        for _args in product(*arg_lists):
            for _kwargs in product(*keyed):
                check_grads(fun, *args, **kwargs)(*_args, **dict(_kwargs))

    return _combo_check


def check_equivalent(x, y):
    xs, ys = flatten(x)[0], flatten(y)[0]
    assert len(xs) == len(ys) and all(np.shape(a) == np.shape(b) for a, b in zip(xs, ys)), f"Structure mismatch:\nx: {x}\ny: {y}"
    v = [np.random.randn(*np.shape(a)) for a in xs]
    assert scalar_close(_inner(xs, v), _inner(ys, v)), f"Value mismatch:\nx: {x}\ny: {y}"


def check_jvp(f, x):
    raise bridge.ShimUnsupported(bridge.FORWARD, "autograd.test_util.check_jvp")
