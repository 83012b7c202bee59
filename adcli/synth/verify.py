"""``verify(synthesis, args)``: the synthesized rule checked as any rule is, before anything
writes it: declared for the call's signature, served at a dispatch point of the function, and
run through ``adcli.testing.check_rule`` (central finite differences, agreement with the derived
rule, inputs unchanged, repeatable, accumulation). The registry and the function's module are
left as they were."""

from __future__ import annotations

import copy
import sys

import numpy as np

from ..engine.descriptors import describe
from ..engine.grad import vjp
from ..engine.pytree import flatten
from ..engine.registry import remove_rule
from ..gradcheck import GradientMismatch, argument_names
from ..rules.declare import register, rules_for
from ..rules.dispatch import dispatch
from ..testing import RuleReport, check_rule, compare_gradients
from .synthesize import Synthesis


def verify(synthesis: Synthesis, args: tuple, kwargs: dict | None = None, *, timing: bool = False,
           seed: int = 0) -> RuleReport:
    """Check the synthesized rule on ``args`` (and keyword arguments ``kwargs``: the rule is
    declared for that signature); raises GradientMismatch (or RuleError) when it is wrong,
    returns check_rule's report otherwise."""
    func = synthesis.func
    target = f"{func.__module__}:{func.__qualname__}"
    kwargs = kwargs or {}
    types = tuple(describe(a) for a in args) + tuple(f"{k}={describe(v)}" for k, v in sorted(kwargs.items()))
    fwd = synthesis.rule()
    previous = rules_for(target).get(types)  # a rule declared for this signature before: put back after
    module = sys.modules.get(func.__module__)
    bound = module.__dict__.get(func.__qualname__, None) if module is not None else None  # declaring rebinds it
    [rule] = register(target, types, fwd, replace=True, origin=f"synthesized from {synthesis.program.file}")
    try:
        return check_rule(dispatch(func), *args, kwargs=kwargs, rule=rule, timing=timing, seed=seed,
                          argnums=synthesis.argnums)
    finally:
        remove_rule(rule, restore=previous)
        if bound is not None:
            module.__dict__[func.__qualname__] = bound


def agrees(synthesis: Synthesis, args: tuple, kwargs: dict | None = None, seed: int = 0) -> None:
    """The cheaper check the profiler's what-if makes before timing a synthesized rule: its
    value and its cotangents for one random output cotangent equal the engine's derived ones
    on ``args`` (rtol 1e-6). Raises GradientMismatch naming the argument; ``verify`` (check_rule)
    is what ``export`` runs before writing the rule."""
    func = synthesis.func
    kwargs = kwargs or {}
    # each side gets its own copy of the arguments: a random generator among them draws the same numbers
    ans, pullback = synthesis.rule()(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    rng = np.random.default_rng(seed)
    leaves, unflatten = flatten(ans)
    g = unflatten([rng.standard_normal(np.shape(v)) if _is_float(v) else None for v in leaves])
    nums = tuple(k for k, a in enumerate(args) if any(_is_float(v) for v in flatten(a)[0])
                 and (synthesis.argnums is None or k in synthesis.argnums))
    if not nums:
        return
    value, want = vjp(func, nums, g)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    got = [cotangent for k, cotangent in enumerate(pullback(g)) if k in nums]
    name = f"{func.__module__}.{func.__qualname__}"
    for v, a in zip(flatten(value)[0], flatten(ans)[0]):
        if _is_float(v) and not np.allclose(a, v, rtol=1e-6, atol=1e-9):
            raise GradientMismatch(f"{name}: the synthesized rule's value differs from the function's: "
                                   f"{np.ravel(a)[:3]} against {np.ravel(v)[:3]}", against="the function's value")
    compare_gradients(name, want, got, "the derived rule", nums, argument_names(func, len(args)),
                      who=("the synthesized rule", "the derived rule"))


def _is_float(v) -> bool:
    return isinstance(v, (float, np.floating)) or isinstance(v, np.ndarray) and v.dtype.kind in "fc"
