"""The finite-difference oracle that adcli's own tests, its import verification and its users'
tests share (public as ``adcli.testing.check_grad``).

``check_grad(f, *args)`` compares adcli's gradient of scalar-valued ``f`` with central finite
differences along several random directions, at several step sizes (the best agreement counts,
so truncation and rounding error cannot fail a correct gradient), and checks that every
gradient has its argument's structure, type, shape and dtype.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .engine.grad import value_and_grad
from .engine.pytree import flatten, paths
from .errors import AdcliError


class GradientMismatch(AdcliError, AssertionError):
    """A gradient disagrees with finite differences, or has the wrong type or shape.

    ``against``: what it was compared with when it disagreed ("finite differences", "the
    native rule", "repeated call", ...), for callers that word the failure their own way."""

    def __init__(self, message: str = "", against: str = "finite differences") -> None:
        super().__init__(message)
        self.against = against


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

    Returns the gradient. Raises GradientMismatch naming the argument, its worst component and
    that component's relative error. float32 arguments get looser default tolerances (and
    larger steps).

    >>> import numpy as np
    >>> _ = check_grad(lambda x: np.sum(np.sin(x) ** 2), np.linspace(0.0, 1.0, 4))
    """
    return gradient_check(f, args, argnums, directions=directions, steps=steps, rtol=rtol, atol=atol, seed=seed,
                          kwargs=kwargs)


def gradient_check(f: Callable, args: tuple, argnums, *, directions: int = 3, steps: tuple = (1e-3, 1e-4, 1e-5, 1e-6),
                   rtol: float | None = None, atol: float | None = None, seed: int = 0, kwargs: dict | None = None,
                   names: list | None = None, who: str = "adcli", explain: bool = True):
    """``check_grad``; ``names``: the arguments' names (else read from ``f``'s signature), ``who``:
    what computed the gradient, as the failure names it ("adcli", "the rule"). ``explain=False``
    fails naming the random direction only: the worst component costs finite differences
    component by component, which a caller that only asks whether the check holds need not pay."""
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    value, grads = value_and_grad(f, argnums)(*args, **kwargs)
    grads = (grads,) if isinstance(argnums, int) else grads
    low = any(np.result_type(v) == np.float32 for k in nums for v in flatten(args[k])[0] if is_float_leaf(v))
    rtol = rtol if rtol is not None else (2e-2 if low else 1e-5)
    atol = atol if atol is not None else (2e-3 if low else 1e-7)
    if low:
        steps = (1e-1, 3e-2, 1e-2, 3e-3)
    names = names if names is not None else argument_names(f, len(args))
    for k, g in zip(nums, grads):
        _check_structure(args[k], g, k, names)
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
                worst = worst_component(f, args, k, g, steps, rtol, atol, seed, kwargs) if explain else None
                if worst is not None:
                    raise GradientMismatch(worst.message(_argument(k, names), who))
                raise GradientMismatch(
                    f"the gradient w.r.t. {_argument(k, names)} disagrees with finite differences along a random "
                    f"direction: {who} {predicted:.6g}, finite differences {estimates[best]:.6g} (step {steps[best]}; "
                    f"relative error {_relative(predicted, estimates[best])})")
    return grads[0] if isinstance(argnums, int) else grads


def argument_names(f: Callable, n: int) -> list:
    """The names of ``f``'s first ``n`` positional parameters where its signature says them, else []."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # a builtin or a ufunc without a readable signature
        return []
    if any(p.kind is p.VAR_POSITIONAL for p in params[:n]):
        return []
    return [p.name for p in params[:n] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _argument(k: int, names: list | None) -> str:
    return f"argument {k} ({names[k]})" if names and k < len(names) else f"argument {k}"


def _relative(value: float, expected: float) -> str:
    return f"{abs(value - expected) / abs(expected):.3g}" if expected else "inf"


@dataclass
class Worst:
    """The component of one argument's gradient furthest from finite differences."""

    where: str  # the leaf's path and the index in it: "[3]", "['W'][0, 1]"
    value: float  # the gradient's component
    expected: float  # its central finite difference
    differ: int  # components out of tolerance
    checked: int  # components checked
    size: int  # components the argument has

    @property
    def relative(self) -> str:
        return _relative(self.value, self.expected)

    def message(self, argument: str, who: str = "adcli") -> str:
        """One line: the argument, its worst component, both values, the relative error, how many differ."""
        sample = f" (of {self.checked} checked)" if self.checked < self.size else ""
        at = f" {self.where}" if self.where else ""
        return (f"the gradient w.r.t. {argument} is wrong: worst component{at}: {who} {self.value:.6g}, finite "
                f"differences {self.expected:.6g} (relative error {self.relative}); {self.differ} of {self.size} "
                f"component(s){sample} differ")


MAX_COMPONENTS = 512  # finite differences per argument when naming the worst component


def worst_component(f, args, k, g, steps, rtol, atol, seed=0, kwargs=None, limit: int = MAX_COMPONENTS):
    """The worst component of ``g`` (the gradient w.r.t. argument ``k``) against central finite
    differences, one component at a time (at most ``limit``, chosen at random), or None if every
    component checked agrees. Each component's estimate is the step's closest to ``g``: a
    component is reported only when no step agrees."""
    kwargs = kwargs or {}
    leaves, unflatten = flatten(args[k])
    gleaves = flatten(g)[0] if g is not None else [None] * len(leaves)
    where = paths(args[k])
    spots = [(j, i) for j, v in enumerate(leaves) if is_float_leaf(v) and gleaves[j] is not None
             for i in range(int(np.size(v)))]
    chosen = spots
    if len(spots) > limit:
        pick = np.random.default_rng(seed).choice(len(spots), limit, replace=False)
        chosen = [spots[i] for i in sorted(pick)]
    worst, worst_excess, differ = None, 0.0, 0
    for j, i in chosen:
        v = leaves[j]
        d = np.zeros(np.shape(v))
        d.flat[i] = 1.0
        dirs = [d if n == j else None for n in range(len(leaves))]
        value = float(np.ravel(np.asarray(gleaves[j], dtype=np.float64))[i])
        best, err = None, np.inf
        for h in steps:
            plus, minus = list(args), list(args)
            plus[k] = unflatten(_perturb(leaves, dirs, h))
            minus[k] = unflatten(_perturb(leaves, dirs, -h))
            fd = (float(f(*plus, **kwargs)) - float(f(*minus, **kwargs))) / (2 * h)
            if np.isfinite(fd) and abs(fd - value) < err:
                best, err = fd, abs(fd - value)
        if best is None:
            continue
        excess = err / (atol + rtol * max(abs(value), abs(best)))
        if excess > 1:
            differ += 1
            if excess > worst_excess:
                index = np.unravel_index(i, np.shape(v)) if np.ndim(v) else ()
                spot = where[j] + (f"[{', '.join(map(str, index))}]" if index else "")
                worst, worst_excess = (spot, value, best), excess
    if worst is None:
        return None
    size = sum(int(np.size(leaves[j])) for j in {j for j, _ in spots})
    return Worst(worst[0], worst[1], worst[2], differ, len(chosen), size)


def _check_structure(arg, g, k, names=None) -> None:
    a = _argument(k, names)
    leaves, _ = flatten(arg)
    if g is None:
        raise GradientMismatch(f"the gradient of {a} is None")
    gleaves, _ = flatten(g)
    where = paths(arg)
    if len(gleaves) != len(leaves):
        raise GradientMismatch(f"the gradient of {a} has {len(gleaves)} leaves, the argument has {len(leaves)}")
    for p, v, gl in zip(where, leaves, gleaves):
        if not is_float_leaf(v):
            continue
        if type(gl) is not type(v):
            raise GradientMismatch(f"the gradient of {a}{p} is {type(gl).__name__}, the argument is {type(v).__name__}")
        if isinstance(v, (np.ndarray, np.generic)) and (np.shape(gl) != np.shape(v) or gl.dtype != v.dtype):
            raise GradientMismatch(
                f"the gradient of {a}{p} has shape {np.shape(gl)} and dtype {gl.dtype}, "
                f"the argument {np.shape(v)} and {v.dtype}"
            )
