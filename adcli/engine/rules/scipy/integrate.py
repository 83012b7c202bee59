"""A native rule for ``scipy.integrate.odeint``: the adjoint method.

``ys = odeint(func, y0, t, args)`` solves y' = func(y, t, *args). The forward pass is SciPy's
own solve on the plain values. The reverse pass integrates, interval by interval from the last
time back to the first, the augmented system

    y' = f(y, t, θ),    a' = -a ∂f/∂y,    θ̄' = -a ∂f/∂θ

from (ys[i], ā_i, θ̄) at t[i] to t[i-1], where ā_i adds the cotangent of ys[i]; at t[0], ``a`` is
the cotangent of y0 and θ̄ that of the traced entries of ``args``. The products a ∂f/∂y and
a ∂f/∂θ are VJPs of the user's ``func``, taken with the engine itself (one nested gradient per
evaluation of the augmented system), with the caller's tolerances. The output times' cotangent
is ``g[i] . f(ys[i], t[i])`` for the later times and minus the adjoint (less ``g[0]``) times
``f(y0, t0)`` for the first. A ``func`` that reads a traced value other than through ``y0``
and ``args`` is refused (its gradient would be lost).
"""

from __future__ import annotations

import inspect

import numpy as np

from ....errors import TracingError, UnsupportedError
from ...core import Primitive, Tracer, record_result, unwrap
from ...fills import call_plain
from ...grad import vjp
from ...library import library_rule, original
from ...pytree import flatten, hidden_in, paths
from ...where import user_location

_NAME = "scipy.integrate.odeint"


def _adjoint(ans, g, func, t, plain_leaves, unflatten, traced, options, tfirst):
    """(cotangent of y0, of t, {leaf position in args: its cotangent})."""
    n = ans.shape[1]
    sizes = [np.size(plain_leaves[k]) for k in traced]
    nums = tuple(range(1, 1 + len(traced)))

    def f_of(y, tt, *params):
        leaves = list(plain_leaves)
        for k, p in zip(traced, params):
            leaves[k] = p
        full = unflatten(leaves)
        out = func(tt, y, *full) if tfirst else func(y, tt, *full)
        return np.reshape(np.stack(out) if isinstance(out, (list, tuple)) else out, (n,))

    def augmented(s, tt):
        y, a = s[:n], s[n:2 * n]
        dy, grads = vjp(lambda yy, *p: f_of(yy, tt, *p), (0,) + nums, a)(y, *[plain_leaves[k] for k in traced])
        parts = [np.asarray(dy, dtype=float).ravel(), -np.ravel(grads[0])]
        parts += [-np.ravel(gp) for gp in grads[1:]]
        return np.concatenate(parts)

    g = np.reshape(np.asarray(g, dtype=float), ans.shape)
    a = g[-1].copy()
    theta = np.zeros(sum(sizes))
    for i in range(len(t) - 1, 0, -1):
        s0 = np.concatenate([ans[i], a, theta])
        s1 = original(_NAME)(augmented, s0, np.array([t[i], t[i - 1]]), **options)[-1]
        a = s1[n:2 * n] + g[i - 1]
        theta = s1[2 * n:]
    out, at = {}, 0
    for k, size in zip(traced, sizes):
        out[k] = np.reshape(theta[at:at + size], np.shape(plain_leaves[k]))
        at += size
    # d/dt[i] of ys[i] is f(ys[i], t[i]) (i >= 1; later outputs do not move); moving t[0] moves
    # every later output by -Phi f(y0, t0), whose cotangent is the adjoint less g[0]
    f_at = [np.ravel(f_of(ans[i], t[i], *[plain_leaves[k] for k in traced])) for i in range(len(t))]
    gt = np.array([np.dot(g[i], f_at[i]) for i in range(len(t))])
    gt[0] = -np.dot(a - g[0], f_at[0])
    return a, gt, out


def _vjp(position):
    def vjp(g, ans, y0, t, *args, func, options, tfirst, memo):
        hit = memo.get("g")
        if hit is None or hit[0] is not g:  # one backward integration serves every argument
            traced = memo["traced"]
            memo["g"] = (g, _adjoint(ans, g, func, np.asarray(t, dtype=float), memo["leaves"], memo["unflatten"], traced,
                                     options, tfirst))
        gy0, gt, gargs = memo["g"][1]
        if position == 0:
            return np.reshape(gy0, np.shape(y0))
        if position == 1:
            return np.reshape(gt, np.shape(t))
        return gargs[position - 2]

    return vjp


_VJPS = [_vjp(k) for k in range(2 + 256)]  # y0, t and up to 256 arrays and numbers in args


@library_rule(_NAME, own=("args",), arrays=("y0", "t"))
def _odeint(func, y0, t, *rest, **kwargs):
    bound = _signature().bind(func, y0, t, *rest, **kwargs)
    bound.apply_defaults()
    options = dict(bound.arguments)
    args = options.pop("args")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    for k in ("func", "y0", "t", "Dfun"):
        options.pop(k)
    tfirst = bool(options.pop("tfirst"))
    if options["full_output"]:
        raise UnsupportedError(f"{_NAME}(..., full_output=True) with a traced value at {user_location(3)}: "
                               "call it without full_output")
    # args is a pytree (odeint(f, y0, t, args=(params,)) with params a list of (W, b) pairs): its
    # traced leaves are the parameters the adjoint differentiates; anything else holding a traced
    # value is refused (a silent constant otherwise)
    leaves, unflatten = flatten(args)
    if len(leaves) > len(_VJPS) - 2:
        raise UnsupportedError(f"{_NAME} with {len(leaves)} arrays and numbers in args and traced values, at "
                               f"{user_location(3)}: pack them into fewer arrays")
    for k, v in enumerate(leaves):
        if not isinstance(v, Tracer) and hidden_in(v):
            raise UnsupportedError(f"{_NAME}(..., args=...) at {user_location(3)}: args{paths(args)[k]} is a "
                                   f"{type(v).__name__} holding a traced value, which the adjoint cannot follow; "
                                   "pass dicts, lists and tuples of arrays")
    traced = [k for k, v in enumerate(leaves) if isinstance(v, Tracer)]
    plain_leaves = [unwrap(v) for v in leaves]
    plain_args = unflatten(plain_leaves)
    y0v = np.asarray(unwrap(y0), dtype=float)
    try:
        # the program's func runs on plain values here: NumPy's own constructors (engine.fills)
        ans = call_plain(original(_NAME), func, y0v, unwrap(t), args=plain_args, tfirst=tfirst, **options)
    except TracingError as e:
        raise TracingError(f"the function {getattr(func, '__qualname__', func)!r} that {_NAME} integrates, at "
                           f"{user_location(3)}, reads a traced value other than its y and args: pass the value "
                           "through args=(...) so its gradient is kept") from e
    options.pop("full_output")
    memo = {"traced": traced, "leaves": plain_leaves, "unflatten": unflatten}
    prim = Primitive(_NAME, None, *_VJPS[:2 + len(leaves)])
    return record_result(prim, ans, (y0, t) + tuple(leaves),
                         {"func": func, "options": options, "tfirst": tfirst, "memo": memo})


_SIG: list = []


def _signature() -> inspect.Signature:
    if not _SIG:
        _SIG.append(inspect.signature(original(_NAME)))
    return _SIG[0]
