"""``verify(synthesis, args)``: the synthesized rule checked as any rule is, before anything
writes it: declared for the call's signature, served at a dispatch point of the function, and
run through ``adcli.testing.check_rule`` (central finite differences, agreement with the derived
rule, inputs unchanged, repeatable, accumulation). The registry and the function's module are
left as they were."""

from __future__ import annotations

import sys

from ..engine.descriptors import describe
from ..engine.registry import remove_rule
from ..rules.declare import register, rules_for
from ..rules.dispatch import dispatch
from ..testing import RuleReport, check_rule
from .synthesize import Synthesis


def verify(synthesis: Synthesis, args: tuple, *, timing: bool = False, seed: int = 0) -> RuleReport:
    """Check the synthesized rule on ``args``; raises GradientMismatch (or RuleError) when it is
    wrong, returns check_rule's report otherwise."""
    func = synthesis.func
    target = f"{func.__module__}:{func.__qualname__}"
    types = tuple(describe(a) for a in args)
    fwd = synthesis.load()
    previous = rules_for(target).get(types)  # a rule declared for this signature before: put back after
    module = sys.modules.get(func.__module__)
    bound = module.__dict__.get(func.__qualname__, None) if module is not None else None  # declaring rebinds it
    [rule] = register(target, types, fwd, replace=True, origin=f"synthesized from {synthesis.program.file}")
    try:
        return check_rule(dispatch(func), *args, rule=rule, timing=timing, seed=seed)
    finally:
        remove_rule(rule, restore=previous)
        if bound is not None:
            module.__dict__[func.__qualname__] = bound
