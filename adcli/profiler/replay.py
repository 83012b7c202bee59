"""Isolated replays: the costs the advisor ranks by, measured at the end of the profiled run.

For each signature that covers most of the gradient time, its captured sample inputs are run
again, with no profiler attached, until the timing is stable (median of repeats):

* primal: the call without AD;
* derived: one gradient through the call as the run served it (forward + reverse), the output
  reduced with fixed random weights so every output element gets a cotangent;
* every importable autograd rule for the callable: imported for the sample's exact signature,
  verified against finite differences and the derived gradient on the sample, then timed.
"""

from __future__ import annotations

import numpy as np

from ..engine.descriptors import array_type
from ..engine.grad import vjp
from ..engine.pytree import flatten
from ..errors import AdcliError, RuleDisagreement
from ..measure import peak_bytes, stable_median
from ..rules.autograd_catalog import find
from ..rules.autograd_import import import_rule, unimport
from ..rules.declare import register, unregister
from .decompose import calibration, decompose, source_lines
from .model import ImportOutcome, ImportTrial, Profile, Replay, SignatureStats


def choose(profile: Profile, coverage: float = 0.95, limit: int = 12) -> list[SignatureStats]:
    """The signatures worth replaying: by inclusive gradient time, until ``coverage`` of the
    total is covered, at most ``limit``."""
    sigs = sorted(profile.signatures, key=lambda s: -s.gradient_s)
    total = max(profile.totals.gradient_s, 1e-12)
    chosen, covered = [], 0.0
    for s in sigs:
        if len(chosen) >= limit or covered >= coverage * total:
            break
        chosen.append(s)
        covered += s.self_forward_s + s.self_reverse_s
    return chosen


def _float_argnums(args) -> tuple:
    return tuple(i for i, a in enumerate(args)
                 if any(type(v) is float or (isinstance(v, (np.ndarray, np.floating)) and np.result_type(v).kind == "f")
                        for v in flatten(a)[0]))


def replay(sig, budget: float = 0.2, seed: int = 0) -> Replay:
    """Measure one signature (what the session observed: ``func``, ``sample``, ``signature``)."""
    fn, args, kwargs = sig.func, sig.sample, sig.sample_kwargs or {}
    if fn is None:
        return Replay(error="the callable could not be found again (a nested function or a method?)")
    if not isinstance(args, list):
        return Replay(error=f"no sample inputs ({args or 'not captured'})")
    argnums = _float_argnums(args)
    if sig.traced is not None:  # as in the run: the arguments a gradient flowed through, no others
        argnums = tuple(i for i in argnums if i in sig.traced)
        if not sig.traced:
            return Replay(error="none of its arguments was traced in the run: its work is plain NumPy, "
                                "no rule applies")
    if not argnums:
        return Replay(error="no float argument to differentiate")
    rng = np.random.default_rng(seed)
    args = [with_layout(a, d) for a, d in zip(args, sig.signature.args)]
    out = fn(*args, **kwargs)
    leaves, unflatten = flatten(out)
    cotangent = unflatten([rng.standard_normal(np.shape(o)).astype(np.result_type(o)) if np.result_type(o).kind == "f"
                           else None for o in leaves])
    primal_s, _ = stable_median(lambda: fn(*args, **kwargs), budget)
    # the call's own forward + reverse: the reverse pass starts from a random cotangent of the
    # output, with no reduction added (which would cost as much as the call for big outputs)
    grad = vjp(lambda *a: fn(*a, **kwargs), argnums, cotangent)
    derived_s, repeats = stable_median(lambda: grad(*args), budget)
    result = Replay(primal_s=primal_s, derived_s=derived_s, repeats=repeats,
                    derived_peak_bytes=peak_bytes(lambda: grad(*args)))
    parts = decompose(grad, args)
    result.pullback_s, result.vector_pullback_s = parts.pullback_s, parts.vector_pullback_s
    result.nodes, result.operations = parts.nodes, parts.operations
    result.lines, result.rule_call_s = source_lines(fn), calibration().rule_call_s
    floor = _direct_floor(sig, fn, args, kwargs, argnums, grad, budget)
    if floor is not None:
        result.direct_bytes, result.direct_floor_s = floor
    if sig.kind == "numpy":
        result.imports = _imports(sig, fn, args, kwargs, grad, budget)
    return result


def _direct_floor(sig, fn, args, kwargs, argnums, grad, budget):
    """(peak bytes, seconds) of the same gradient served by the least a direct rule can do: the
    primal, and one new gradient array per argument (zeros). The engine's own per-call cost is
    in both, so an import can be compared with it like for like, and a hand-written rule's cost
    is estimated on top of it. None for a user function (its rules are served through dispatch
    points, which the replay does not rebuild)."""
    if sig.kind != "numpy":
        return None

    def minimal(*a, **k):
        return fn(*a, **k), lambda g: tuple(np.zeros_like(v) if i in argnums else None for i, v in enumerate(a))

    types = sig.signature.key
    try:
        rules = register(fn, types, minimal, source="hand-written", origin="adcli replay: allocation baseline")
    except AdcliError:
        return None  # a rule for this signature exists already (loaded with --rules)
    try:
        seconds, _ = stable_median(lambda: grad(*args), budget)
        return peak_bytes(lambda: grad(*args)), seconds
    finally:
        unregister(fn, types)
        del rules


def with_layout(a, descriptor):
    """``a`` in the memory layout its descriptor names: the sample was copied contiguous, and a
    rule for ``f64[2d,strided]`` or ``f64[2d,F]`` must be replayed on that layout."""
    t = array_type(descriptor) if isinstance(descriptor, str) else None
    if not isinstance(a, np.ndarray) or t is None or a.ndim < 2:
        return a
    if t.layout == "F":
        return np.asfortranarray(a)
    if t.layout == "strided":
        big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
        view = big[tuple(slice(None, None, 2) for _ in a.shape)]
        view[...] = a
        return view
    return a


def _imports(sig, fn, args, kwargs, grad, budget) -> list[ImportTrial]:
    """Try the library rule for this callable on the sample: import it for the exact
    signature (verified against finite differences and the derived gradient), time it, remove it."""
    try:
        entry = find(fn)
    except AdcliError:
        return []
    name = f"autograd {entry.name}"
    if entry.refusal:
        return [ImportTrial(name, ImportOutcome.FAILED, error=entry.refusal)]
    try:
        rules = import_rule(fn, *sig.signature.key, example_args=tuple(args), example_kwargs=dict(kwargs))
    except RuleDisagreement as exc:
        return [ImportTrial(name, ImportOutcome.DISAGREES, error=str(exc))]
    except AdcliError as exc:
        return [ImportTrial(name, ImportOutcome.FAILED, error=str(exc))]
    try:
        rule_s, _ = stable_median(lambda: grad(*args), budget)  # the same vjp, now served by the import
        return [ImportTrial(name, ImportOutcome.AGREES, rule_s=rule_s, rule_peak_bytes=peak_bytes(lambda: grad(*args)),
                            verification=getattr(rules[0], "verification", ""))]
    finally:
        unimport(*rules)
