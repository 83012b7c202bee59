"""``adcli check RULES --profile P --sizes 1,4,16``: the evidence a rule's pull request carries.

For each rule with sample inputs in the profile: the gradient check (``check_rule`` on the
recorded sample), then, at each size, the recorded sample scaled (its data arguments repeated
``size`` times along their size axis, the parameters left as they are: app/scaling.py; a size
the shapes do not allow is reported as such): the time and peak memory of one gradient through
the rule, the same without it (the native rule or the derivation it replaces), autograd's where
it has the function, and the rule's speedup. Timings are lower quartiles over about ``budget``
seconds, BLAS on one thread.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ..engine.grad import vjp
from ..engine.registry import suspended, without_declared
from ..gradcheck import argument_names
from ..measure import peak_bytes, stable_median
from ..profiler.replay import float_argnums
from ..testing import GradientMismatch, check_rule
from .scaling import apply, describe_scaling, plan


@dataclass
class SizeRow:
    size: int
    shapes: str
    rule_s: float | None = None
    rule_bytes: int | None = None
    without_s: float | None = None
    without_bytes: int | None = None
    peer_s: float | None = None
    peer_bytes: int | None = None
    note: str = ""

    @property
    def speedup(self) -> float | None:
        return self.without_s / self.rule_s if self.rule_s and self.without_s else None

    def to_json(self) -> dict:
        return {**asdict(self), "speedup": self.speedup}


@dataclass
class Evidence:
    rule: str
    check: str  # "passed" or the failure
    without: str  # what serves the call without the rule
    rows: list = field(default_factory=list)
    scaled: list = field(default_factory=list)  # a Scaled per array argument: which were repeated, along which axis

    @property
    def scaling(self) -> str:
        return describe_scaling(self.scaled)

    def to_json(self) -> dict:
        return {"rule": self.rule, "check": self.check, "without": self.without, "scaled": [s.to_json() for s in self.scaled],
                "scaling": self.scaling, "rows": [r.to_json() for r in self.rows]}


def argument_names_of(call, args: list, kwargs: dict) -> list:
    """The names ``--scale`` gives the arguments: the function's parameter names where its
    signature says them, else their positions; keyword arguments by their keywords."""
    names = argument_names(getattr(call, "__adcli_original__", call), len(args))
    return [names[i] if i < len(names) else str(i) for i in range(len(args))] + list(kwargs)


def _gradient(fn, args, kwargs):
    argnums = float_argnums(args)
    out = fn(*args, **kwargs)
    cot = np.ones_like(out) if isinstance(out, np.ndarray) else 1.0
    g = vjp(lambda *a: fn(*a, **kwargs), argnums, cot)
    return lambda: g(*args)


def _peer(rule, args, kwargs, budget):
    """(seconds, peak bytes) of autograd's gradient of the same NumPy function, or None (a user
    function has no peer)."""
    if isinstance(rule.target, tuple):
        return None
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:  # pragma: no cover - autograd is a dependency
        return None
    fn = getattr(anp, getattr(rule.target, "__name__", ""), None)
    if fn is None:
        return None
    argnums = float_argnums(args)
    g = autograd.grad(lambda *a: anp.sum(fn(*a, **kwargs)), argnums)
    g(*args)
    return stable_median(lambda: g(*args), budget)[0], peak_bytes(lambda: g(*args))


def evidence(rule, call, args: list, sizes: list, kwargs: dict | None = None, budget: float = 0.2,
             scaled: list | None = None) -> Evidence:
    """The evidence for one rule, called through ``call`` on the recorded ``args`` and ``kwargs``,
    scaled as ``scaled`` says (scaling.plan; inferred from the shapes when None)."""
    kwargs = kwargs or {}
    names = argument_names_of(call, args, kwargs)
    if scaled is None:
        scaled = plan(names, [*args, *kwargs.values()])
    try:
        check_rule(call, *args, kwargs=kwargs, timing=False, rule=rule)
        status = "passed"
    except GradientMismatch as exc:
        status = f"FAILED: {str(exc).splitlines()[0]}"
    ev = Evidence(str(rule.signature), status, without_declared(rule.target) or "nothing", scaled=scaled)
    with threadpool_limits(1):
        for size in sizes:
            values = apply([*args, *kwargs.values()], scaled, names, size)
            xs, kws = values[:len(args)], dict(zip(kwargs, values[len(args):]))
            row = SizeRow(size, ", ".join(str(tuple(a.shape)) for a in values if isinstance(a, np.ndarray)))
            try:
                with_rule = _gradient(call, xs, kws)
                row.rule_s = stable_median(with_rule, budget)[0]
                row.rule_bytes = peak_bytes(with_rule)
                with suspended(rule):
                    plain = _gradient(call, xs, kws)
                    row.without_s = stable_median(plain, budget)[0]
                    row.without_bytes = peak_bytes(plain)
                row.peer_s, row.peer_bytes = _peer(rule, xs, kws, budget) or (None, None)
            except Exception as exc:  # noqa: BLE001 - a size the shapes do not allow
                row.note = f"not at this size: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
            ev.rows.append(row)
    return ev
