"""Testing rules, for adcli's own tests and its users': the finite-difference oracle
(``check_grad``, from adcli.gradcheck) and ``check_rule``, which checks the rule that serves one
call the way Mooncake's ``test_rule`` does.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .engine.core import Tracer
from .engine.descriptors import callable_name
from .engine.grad import value_and_grad
from .engine.pytree import flatten
from .engine.registry import names_of, qualified_name, serving
from .engine.signature import Signature
from .errors import RuleError
from .gradcheck import GradientMismatch, check_grad, is_float_leaf
from .measure import Measurement, measure
from .rules.declare import suspended, target_key
from .units import duration, human_bytes

__all__ = ["check_grad", "check_rule", "GradientMismatch", "RuleReport", "Measurement", "measure"]


@dataclass
class RuleReport:
    """What check_rule measured; ``rule`` and ``fallback`` describe who served the call."""

    signature: str
    rule: str
    fallback: str | None
    cost: Measurement | None
    fallback_cost: Measurement | None
    checks: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.signature}: served by {self.rule}; all checks passed ({', '.join(self.checks)})"]
        if self.cost is not None:
            lines.append(f"  gradient {duration(self.cost.seconds)}, peak memory {human_bytes(self.cost.peak_bytes)}")
        if self.fallback_cost is not None:
            fc = self.fallback_cost
            lines.append(f"  {self.fallback}: {duration(fc.seconds)}, peak memory {human_bytes(fc.peak_bytes)} "
                         f"(the rule is {fc.seconds / max(self.cost.seconds, 1e-12):.2f}x faster)")
        return "\n".join(lines)


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
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    try:
        key = target_key(target)
    except RuleError:  # a lambda or nested function: only its own body can serve it
        key = None
    served = serving(key, args, kwargs) if key is not None else None
    if served is None:
        module, qualname = names_of(key) if key is not None else callable_name(target)
        raise GradientMismatch(f"no rule serves {Signature.of_call(module, qualname, args, kwargs)}")
    rule = served.rule
    fallback = f"{served.fallback} rule" if rule is not None and served.fallback is not None else None
    name = str(rule.signature) if rule is not None else qualified_name(key)
    argnums = tuple(i for i, a in enumerate(args) if any(is_float_leaf(v) for v in flatten(a)[0]))
    if not argnums:
        raise GradientMismatch(f"{name}: no float argument to differentiate")
    primal = target(*args, **kwargs)
    primal_leaves = flatten(primal)[0]
    weights = [rng.standard_normal(np.shape(v)) for v in primal_leaves]
    seeds = {i: [rng.standard_normal(np.shape(v)) if is_float_leaf(v) else None for v in flatten(args[i])[0]] for i in argnums}
    captured = []

    def scalar(*a):
        out = target(*a, **kwargs)
        captured.append(out)
        return sum(np.sum(w * o) for w, o in zip(weights, flatten(out)[0]))

    checks = []
    before = copy.deepcopy(args)
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
    if rule is not None and fallback is not None:
        with suspended(rule):
            derived = value_and_grad(scalar, argnums)(*args)[1]
            if timing:
                fallback_cost = measure(lambda: value_and_grad(scalar, argnums)(*args), repeats)
        _compare(name, grads, derived, f"the {fallback}", rtol=rtol or 1e-6, atol=atol or 1e-9)
        checks.append(f"agrees with {fallback}")
    captured.clear()
    return RuleReport(name, repr(rule) if rule is not None else f"{served.source} rule", fallback, cost, fallback_cost,
                      checks)


def _add_tree(g, seed_leaves):
    leaves, unflatten = flatten(g)
    return unflatten([v if s is None else v + s for v, s in zip(leaves, seed_leaves)])


def _compare(name, a, b, what, exact=False, rtol=1e-6, atol=1e-9):
    la, lb = flatten(list(a))[0], flatten(list(b))[0]
    for x, y in zip(la, lb):
        if x is None or y is None:
            continue
        low = max(np.finfo(np.result_type(v)).resolution if np.result_type(v).kind == "f" else 1e-15 for v in (x, y))
        tol = (max(rtol, 10 * low), max(atol, low * max(np.max(np.abs(x), initial=0.0), 1.0)))  # float32: its precision
        ok = np.array_equal(x, y) if exact else np.allclose(x, y, rtol=tol[0], atol=tol[1])
        if not ok:
            first, second = np.asarray(x).ravel()[:4], np.asarray(y).ravel()[:4]
            raise GradientMismatch(f"{name}: gradient differs from {what}: {first} vs {second}")


def _check_output(name, primal, traced):
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
