"""The finite-difference oracle that adcli's own tests and its users' tests share.

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
from .measure import peak_bytes, stable_median


class GradientMismatch(AdcliError, AssertionError):
    """A gradient disagrees with finite differences, or has the wrong type or shape."""


def _is_float_leaf(v) -> bool:
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
    low = any(np.result_type(v) == np.float32 for k in nums for v in flatten(args[k])[0] if _is_float_leaf(v))
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
            dirs = [rng.standard_normal(np.shape(v)) if _is_float_leaf(v) else None for v in leaves]
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
        if not _is_float_leaf(v):
            continue
        if type(gl) is not type(v):
            raise GradientMismatch(f"gradient of argument {k}{p} is {type(gl).__name__}, the argument is {type(v).__name__}")
        if isinstance(v, (np.ndarray, np.generic)) and (np.shape(gl) != np.shape(v) or gl.dtype != v.dtype):
            raise GradientMismatch(
                f"gradient of argument {k}{p} has shape {np.shape(gl)} and dtype {gl.dtype}, "
                f"the argument {np.shape(v)} and {v.dtype}"
            )


# --- check_rule ---------------------------------------------------------------------------------

import copy as _copy  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402


@dataclass
class Cost:
    """Median time of one gradient (forward + reverse), and the peak memory it allocated on top
    of what was live before (tracemalloc: NumPy buffers and Python objects)."""

    seconds: float
    peak_bytes: int


@dataclass
class RuleReport:
    """What check_rule measured; ``rule`` and ``fallback`` describe who served the call."""

    signature: str
    rule: str
    fallback: str | None
    cost: Cost | None
    fallback_cost: Cost | None
    checks: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.signature}: served by {self.rule}; all checks passed ({', '.join(self.checks)})"]
        if self.cost is not None:
            lines.append(f"  gradient {self.cost.seconds * 1e6:.1f} us, peak memory {self.cost.peak_bytes} bytes")
        if self.fallback_cost is not None:
            fc = self.fallback_cost
            lines.append(f"  {self.fallback}: {fc.seconds * 1e6:.1f} us, peak memory {fc.peak_bytes} bytes "
                         f"(the rule is {fc.seconds / max(self.cost.seconds, 1e-12):.2f}x faster)")
        return "\n".join(lines)


def measure(fn: Callable, repeats: int = 15) -> Cost:
    """Median wall time of ``fn()`` over ``repeats`` calls (untraced), and the peak memory one
    call allocates above what was live before it (tracemalloc)."""
    seconds, _ = stable_median(fn, budget=0.0, min_repeats=repeats, max_repeats=repeats)
    return Cost(seconds, peak_bytes(fn))


def _served_by(target, args, kwargs):
    from .engine.registry import REGISTRY
    from .engine.signature import signature_key

    key = target
    from .rules.declare import target_key

    try:
        key = target_key(target)
    except Exception:  # noqa: BLE001 - any callable: treat as its own key
        key = target
    e = REGISTRY.get(key)
    if e is None:
        from .engine.rules_elementwise import UFUNC_PRIMITIVES

        return ("native rule", None) if key in UFUNC_PRIMITIVES else (None, None)
    rule = e.by_signature.get(signature_key(args, kwargs))
    if rule is not None:
        from .engine.rules_elementwise import UFUNC_PRIMITIVES

        native = e.native is not None or key in UFUNC_PRIMITIVES
        # a user function's fallback is its own body, run with tracers: its derived rule
        derived = e.derivation is not None or isinstance(key, tuple)
        fallback = "native rule" if native else "derived rule" if derived else None
        return rule, fallback
    from .engine.rules_elementwise import UFUNC_PRIMITIVES

    if e.native is not None or key in UFUNC_PRIMITIVES:
        return "native rule", ("derived rule" if e.derivation is not None else None)
    if e.derivation is not None:
        return "derived rule", None
    return None, None


def check_rule(target: Callable, *args: Any, kwargs: dict | None = None, seed: int = 0,
               rtol: float | None = None, atol: float | None = None, repeats: int = 15,
               timing: bool = True) -> RuleReport:
    """Check the rule that serves ``target(*args, **kwargs)``, in the spirit of Mooncake's
    ``test_rule``: gradient against central finite differences (random directions, several
    steps), agreement with the derived/native rule it replaces, output type/shape/dtype equal to
    the primal's, inputs not mutated, repeated calls identical, accumulation into a gradient
    buffer that already holds a cotangent; then time and allocations against the fallback.

    Raises GradientMismatch (an AssertionError) on the first failed check; returns a RuleReport.
    """
    from .rules.declare import Rule, suspended

    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    rule, fallback = _served_by(target, args, kwargs)
    if rule is None:
        from .engine.signature import call_signature

        raise GradientMismatch(f"no rule serves {getattr(target, '__name__', target)}({call_signature(args, kwargs)})")
    name = getattr(rule, "signature_string", None) or f"{getattr(target, '__name__', target)}"
    argnums = tuple(i for i, a in enumerate(args) if any(_is_float_leaf(v) for v in flatten(a)[0]))
    if not argnums:
        raise GradientMismatch(f"{name}: no float argument to differentiate")
    primal = target(*args, **kwargs)
    primal_leaves = flatten(primal)[0]
    weights = [rng.standard_normal(np.shape(v)) for v in primal_leaves]
    seeds = {i: [rng.standard_normal(np.shape(v)) if _is_float_leaf(v) else None for v in flatten(args[i])[0]] for i in argnums}
    captured = []

    def scalar(*a):
        out = target(*a, **kwargs)
        captured.append(out)
        return sum(np.sum(w * o) for w, o in zip(weights, flatten(out)[0]))

    checks = []
    before = _copy.deepcopy(args)
    grads = check_grad(scalar, *args, argnums=argnums, rtol=rtol, atol=atol, seed=seed)
    checks.append("finite differences")
    _check_output(name, primal, captured[0])
    checks.append("output type/shape/dtype")
    _check_unchanged(name, before, args)
    checks.append("inputs unchanged")
    again = value_and_grad(scalar, argnums)(*args)[1]
    _compare(name, grads, again, "repeated call", exact=True)
    checks.append("repeatable")

    def seeded(order):
        def f(*a):
            pre = sum(np.sum(s * v) for i in argnums for s, v in zip(seeds[i], flatten(a[i])[0]) if s is not None)
            body = scalar(*a)
            return (pre + body) if order == "before" else (body + pre)
        return f

    for order in ("before", "after"):
        g2 = value_and_grad(seeded(order), argnums)(*args)[1]
        expected = [_add_tree(g, seeds[i]) for g, i in zip(grads, argnums)]
        _compare(name, expected, g2, f"accumulation with another cotangent recorded {order} the call")
    checks.append("accumulation")
    cost = measure(lambda: value_and_grad(scalar, argnums)(*args), repeats) if timing else None
    fallback_cost = None
    if isinstance(rule, Rule) and fallback is not None:
        with suspended(rule):
            derived = value_and_grad(scalar, argnums)(*args)[1]
            if timing:
                fallback_cost = measure(lambda: value_and_grad(scalar, argnums)(*args), repeats)
        _compare(name, grads, derived, f"the {fallback}", rtol=rtol or 1e-6, atol=atol or 1e-9)
        checks.append(f"agrees with {fallback}")
    captured.clear()
    return RuleReport(name, str(rule), fallback if isinstance(rule, Rule) else None, cost, fallback_cost, checks)


def _add_tree(g, seed_leaves):
    leaves, unflatten = flatten(g)
    return unflatten([v if s is None else v + s for v, s in zip(leaves, seed_leaves)])


def _compare(name, a, b, what, exact=False, rtol=1e-6, atol=1e-9):
    la, lb = flatten(list(a))[0], flatten(list(b))[0]
    for x, y in zip(la, lb):
        if x is None or y is None:
            continue
        ok = np.array_equal(x, y) if exact else np.allclose(x, y, rtol=rtol, atol=atol)
        if not ok:
            first, second = np.asarray(x).ravel()[:4], np.asarray(y).ravel()[:4]
            raise GradientMismatch(f"{name}: gradient differs from {what}: {first} vs {second}")


def _check_output(name, primal, traced):
    from .engine.core import Tracer

    pl, tl = flatten(primal)[0], flatten(traced)[0]
    if len(pl) != len(tl):
        raise GradientMismatch(f"{name}: the rule returned {len(tl)} outputs, the primal {len(pl)}")
    for p, t in zip(pl, tl):
        v = t.value if isinstance(t, Tracer) else t
        if np.shape(v) != np.shape(p) or np.result_type(v) != np.result_type(p):
            raise GradientMismatch(
                f"{name}: the rule's output has shape {np.shape(v)} and dtype {np.result_type(v)}, "
                f"the primal's {np.shape(p)} and {np.result_type(p)}"
            )
        if isinstance(p, np.ndarray) != isinstance(v, np.ndarray):
            raise GradientMismatch(f"{name}: the rule's output is {type(v).__name__}, the primal's {type(p).__name__}")
        if not np.allclose(v, p, rtol=1e-10, atol=1e-12, equal_nan=True):
            raise GradientMismatch(f"{name}: the rule's forward value differs from the primal's")


def _check_unchanged(name, before, after):
    for b, a in zip(flatten(list(before))[0], flatten(list(after))[0]):
        if isinstance(b, np.ndarray) and not np.array_equal(a, b, equal_nan=True):
            raise GradientMismatch(f"{name}: an input array was modified")
