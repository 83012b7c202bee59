"""The finite-difference oracle that adcli's own tests, its import verification and its users'
tests share (public as ``adcli.testing.check_grad``).

``check_grad(f, *args)`` compares adcli's gradient of scalar-valued ``f`` with central finite
differences along several random directions, at several step sizes (the best agreement counts,
so truncation and rounding error cannot fail a correct gradient), and checks that every
gradient has its argument's structure, type, shape and dtype.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .engine.grad import value_and_grad
from .engine.pytree import flatten, paths
from .errors import AdcliError


class GradientMismatch(AdcliError, AssertionError):
    """A gradient disagrees with finite differences, or has the wrong type or shape."""


def is_float_leaf(v) -> bool:
    return type(v) is float or (isinstance(v, (np.floating, np.ndarray)) and np.result_type(v).kind == "f")


def _perturb(leaves, directions, h):
    out = []
    for v, d in zip(leaves, directions):
        if d is None:
            out.append(v)
        elif type(v) is float:
            out.append(v + h * float(d))
        elif isinstance(v, np.generic):
            out.append(v.dtype.type(v + h * d))
        else:
            out.append((v + h * d).astype(v.dtype))
    return out


def _dot(g, d) -> float:
    return float(np.sum(np.asarray(g, dtype=np.float64) * np.asarray(d, dtype=np.float64)))


def check_grad(
    f: Callable,
    *args: Any,
    argnums: int | tuple = 0,
    directions: int = 3,
    steps: tuple = (1e-3, 1e-4, 1e-5, 1e-6),
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    **kwargs: Any,
) -> Any:
    """Assert adcli's gradient of ``f`` at ``args`` matches central finite differences.

    Returns the gradient. Raises GradientMismatch naming the argument, the direction and both
    numbers. float32 arguments get looser default tolerances (and larger steps).

    >>> import numpy as np
    >>> _ = check_grad(lambda x: np.sum(np.sin(x) ** 2), np.linspace(0.0, 1.0, 4))
    """
    rng = np.random.default_rng(seed)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    value, grads = value_and_grad(f, argnums)(*args, **kwargs)
    grads = (grads,) if isinstance(argnums, int) else grads
    low = any(np.result_type(v) == np.float32 for k in nums for v in flatten(args[k])[0] if is_float_leaf(v))
    rtol = rtol if rtol is not None else (2e-2 if low else 1e-5)
    atol = atol if atol is not None else (2e-3 if low else 1e-7)
    if low:
        steps = tuple(s for s in (1e-1, 3e-2, 1e-2, 3e-3) )
    for k, g in zip(nums, grads):
        _check_structure(args[k], g, k)
    for k, g in zip(nums, grads):
        leaves, unflatten = flatten(args[k])
        gleaves = flatten(g)[0] if g is not None else [None] * len(leaves)
        for _ in range(directions):
            dirs = [rng.standard_normal(np.shape(v)) if is_float_leaf(v) else None for v in leaves]
            predicted = sum(_dot(gl, d) for gl, d in zip(gleaves, dirs) if d is not None and gl is not None)
            estimates = []
            for h in steps:
                plus = list(args)
                minus = list(args)
                plus[k] = unflatten(_perturb(leaves, dirs, h))
                minus[k] = unflatten(_perturb(leaves, dirs, -h))
                fd = (float(f(*plus, **kwargs)) - float(f(*minus, **kwargs))) / (2 * h)
                estimates.append(fd)
            # A step can leave the function's domain (log near 0): such estimates are not finite
            # and do not count; the best finite one must agree.
            errors = [abs(fd - predicted) if np.isfinite(fd) else np.inf for fd in estimates]
            best = int(np.argmin(errors))
            if not errors[best] <= atol + rtol * max(abs(predicted), abs(estimates[best])):
                name = getattr(f, "__name__", "f")
                raise GradientMismatch(
                    f"gradient of {name}() w.r.t. argument {k} disagrees with finite differences along a random "
                    f"direction: adcli {predicted!r}, finite differences {estimates[best]!r} (step {steps[best]}), "
                    f"all steps {estimates}"
                )
    return grads[0] if isinstance(argnums, int) else grads


def _check_structure(arg, g, k) -> None:
    leaves, _ = flatten(arg)
    if g is None:
        raise GradientMismatch(f"gradient of argument {k} is None")
    gleaves, _ = flatten(g)
    where = paths(arg)
    if len(gleaves) != len(leaves):
        raise GradientMismatch(f"gradient of argument {k} has {len(gleaves)} leaves, the argument has {len(leaves)}")
    for p, v, gl in zip(where, leaves, gleaves):
        if not is_float_leaf(v):
            continue
        if type(gl) is not type(v):
            raise GradientMismatch(f"gradient of argument {k}{p} is {type(gl).__name__}, the argument is {type(v).__name__}")
        if isinstance(v, (np.ndarray, np.generic)) and (np.shape(gl) != np.shape(v) or gl.dtype != v.dtype):
            raise GradientMismatch(
                f"gradient of argument {k}{p} has shape {np.shape(gl)} and dtype {gl.dtype}, "
                f"the argument {np.shape(v)} and {v.dtype}"
            )
