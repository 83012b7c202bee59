"""Isolated replays: the costs the advisor ranks by, measured at the end of the profiled run.

For each signature that covers most of the gradient time, its captured sample inputs are run
again, with no profiler attached, until the timing is stable:

* primal: the call without AD;
* derived: one gradient through the call as the run served it (forward + reverse), the output
  reduced with fixed random weights so every output element gets a cotangent;

  the two timed in turn (``alternating_medians``, lower quartiles; in CPU time unless the calls
  ran on several cores), so that a machine slowing down for a while slows both and the
  advisor's ratios of them stay true (timed one after the other, one profile in four had a
  primal or a derived time 50% off the other's moment);
* every importable autograd rule for the callable: imported for the sample's exact signature,
  verified against finite differences and the derived gradient on the sample, then timed.
"""

from __future__ import annotations

import time

import numpy as np

from ..data.model import Profile
from ..data.records import ImportOutcome, ImportTrial, Replay, SignatureStats
from ..engine.descriptors import array_type
from ..engine.grad import vjp
from ..engine.pytree import flatten
from ..engine.registry import add_rule, remove_rule
from ..errors import AdcliError, RuleDisagreement, SynthesisError
from ..measure import alternating_medians, alternating_rounds, peak_bytes, stable_median
from ..rules.autograd_catalog import find
from ..rules.autograd_import import import_rule, unimport
from ..rules.declare import register
from ..rules.dispatch import dispatch
from ..synth import synthesize
from ..synth.verify import agrees
from .build import source_lines
from .decompose import calibration, decompose


def choose(profile: Profile, coverage: float = 0.95, limit: int = 12) -> list[SignatureStats]:
    """The signatures worth replaying, most valuable first: by inclusive gradient time (what a
    rule for one could save at most), until ``coverage`` of the total is covered, at most
    ``limit``; those served by a derived rule (which the advice is about) before the others
    (served by a native, imported or hand-written rule: replayed for their AD ratio)."""
    sigs = sorted(profile.signatures, key=lambda s: -s.gradient_s)
    total = max(profile.totals.gradient_s, 1e-12)
    chosen, covered = [], 0.0
    for s in sigs:
        if len(chosen) >= limit or covered >= coverage * total:
            break
        chosen.append(s)
        covered += s.self_forward_s + s.self_reverse_s
    return sorted(chosen, key=lambda s: s.served_by != "derived")  # stable: by time within each


def float_argnums(args) -> tuple:
    return tuple(i for i, a in enumerate(args)
                 if any(type(v) is float or (isinstance(v, (np.ndarray, np.floating)) and np.result_type(v).kind == "f")
                        for v in flatten(a)[0]))


def _setup(sig, seed: int = 0, dispatched: bool = False):
    """What a replay of ``sig`` differentiates: (fn, args, kwargs, argnums, grad), the gradient
    a vjp through one call with a random output cotangent; or a Replay saying why not. With
    ``dispatched``, a user function is called through a dispatch point, so that a rule declared
    for it serves the call (as when the program calls it)."""
    fn, args, kwargs = sig.func, sig.sample, sig.sample_kwargs or {}
    if dispatched and sig.kind == "user" and fn is not None:
        fn = dispatch(fn)
    if fn is None:
        return Replay(error="the callable could not be found again (a nested function or a method?)")
    if not isinstance(args, list):
        return Replay(error=f"no sample inputs ({args or 'not captured'})")
    argnums = float_argnums(args)
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
    # the call's own forward + reverse: the reverse pass starts from a random cotangent of the
    # output, with no reduction added (which would cost as much as the call for big outputs)
    return fn, args, kwargs, argnums, vjp(lambda *a: fn(*a, **kwargs), argnums, cotangent)


def setup(sig, seed: int = 0):
    """What a replay of ``sig`` differentiates, served as in the run (a user function through its
    dispatch point): ``(fn, args, kwargs, argnums, grad)``, or a Replay saying why not. ``sig``:
    anything with the fields of a session's observed signature (``func``, ``sample``,
    ``sample_kwargs``, ``kind``, ``traced``, ``signature``)."""
    return _setup(sig, seed, dispatched=True)


def replay(sig, budget: float = 0.2, seed: int = 0) -> Replay:
    """Measure one signature (what the session observed: ``func``, ``sample``, ``signature``),
    served as in the run: a user function through its dispatch point, so that a rule loaded with
    ``--rules`` serves the replay as it served the program. The primal, the derived gradient
    and, for a NumPy callable, the same gradient served by a minimal direct rule and by the
    library's verified rule are timed in turn, so that their ratios are of one moment."""
    setup = _setup(sig, seed, dispatched=True)
    if isinstance(setup, Replay):
        return setup
    fn, args, kwargs, argnums, grad = setup
    rules: dict = {"floor": None, "import": None}
    trials: list = []
    if sig.kind == "numpy":
        rules["floor"] = _floor_rule(sig, fn, argnums)
        trials, rules["import"] = _imports(sig, fn, args, kwargs)
    try:
        states = [None] + [k for k in ("floor", "import") if rules[k] is not None]
        calls: list = []
        times = alternating_medians([lambda: fn(*args, **kwargs)] + [_served(rules, k, grad, args) for k in states],
                                    (1 + len(states)) * budget, calls=calls)
        peaks = {k: peak_bytes(_served(rules, k, grad, args)) for k in states}
    finally:
        _served(rules, None, lambda: None, ())()  # every trial rule out of the registry again
    seconds = dict(zip(states, times[1:]))
    result = Replay(primal_s=times[0], derived_s=seconds[None], repeats=calls[1], derived_peak_bytes=peaks[None])
    if rules["floor"] is not None:
        result.direct_bytes, result.direct_floor_s = peaks["floor"], seconds["floor"]
    for t in trials:
        if t.outcome is ImportOutcome.AGREES:
            t.rule_s, t.rule_peak_bytes = seconds["import"], peaks["import"]
    result.imports = trials
    parts = decompose(grad, args, derived_s=result.derived_s)
    result.pullback_s, result.vector_pullback_s, result.work_s = parts.pullback_s, parts.vector_pullback_s, parts.work_s
    result.lean_pullback_s, result.closed_fixed_s = parts.lean_pullback_s, parts.closed_fixed_s
    result.lean_forward_s = parts.lean_forward_s
    result.floor_pullback_s = _floor_pullback(fn, args, kwargs, argnums)
    result.nodes, result.operations, result.chain = parts.nodes, parts.operations, parts.chain
    result.lines, result.rule_call_s = source_lines(fn), calibration().rule_call_s
    return result


def in_program(profile: Profile, by_id: dict, budget: float = 0.2, deadline: float | None = None) -> None:
    """What a rule for each replayed derived signature would save in the program, measured:
    the gradients of the functions handed to ``grad`` that call it (the call tree's roots,
    replayed as above) are timed in turn as the run served them, with the signature's best
    agreeing library rule imported, and with a minimal rule for it (its primal, zero
    gradients: the floor any rule pays). A call inside a loop costs what it costs there, not
    what it costs alone. Fills ``program_*`` of each signature's Replay; seconds per run (each
    root's time times its calls). The signature's own replayed gradient is timed in the same
    rounds (``program_alone_s``, per call): set against ``derived_s``, it says how fast the machine
    ran then compared with the replay, whose decomposition the advisor adds to these times (a
    shared machine can run at half speed for seconds; docs/advisor.md § What is measured).
    ``by_id``: the session's observed signatures. Signatures are measured by inclusive time,
    the largest first, until ``deadline`` (a ``time.perf_counter()`` value) passes."""
    roots = []
    for node in profile.tree.children:
        under, stack = set(), [node]
        while stack:
            n = stack.pop()
            under.add(n.sig)
            stack.extend(n.children)
        roots.append((node.sig, node.calls, under))
    grads: dict = {}
    for stats in sorted(profile.signatures, key=lambda s: -s.gradient_s):
        r = stats.replay
        if stats.served_by != "derived" or r is None or not r.measured:
            continue
        if deadline is not None and time.perf_counter() > deadline:
            profile.notes.append("the replay budget ran out before every signature's rules were tried in the program: "
                                 "the advice estimates the rest from their replays alone (--replay-budget to allow more)")
            break
        mine = [(root, calls) for root, calls, under in roots if stats.id in under]
        if not mine:
            continue
        own = _setup(by_id[stats.id], dispatched=True)  # its own replayed gradient, timed alongside
        rules = _what_if_rules(stats, own)
        try:
            totals = [0.0, 0.0, 0.0, 0.0]
            gaps: dict = {}  # "import" / "floor" / "synth" -> [median, low, high] of what it saves per run
            alone = []
            for root, calls in mine:
                if root not in grads:
                    setup = _setup(by_id[root], dispatched=True)
                    grads[root] = None if isinstance(setup, Replay) else (setup[4], setup[1])
                if grads[root] is None:  # a root that cannot be replayed: no complete what-if
                    raise AdcliError("a root cannot be replayed")
                grad, args = grads[root]
                states = [None] + [k for k in ("import", "floor", "synth") if rules.get(k) is not None]
                fns = [_served(rules, k, grad, args) for k in states]
                if not isinstance(own, Replay):
                    fns.append(_served(rules, None, own[4], own[1]))
                rounds = alternating_rounds(fns, budget, more=_wide(len(states)), extra=_EXTRA * budget)
                times = [rounds.quantile(k, 0.25) for k in range(len(fns))]
                for k, t in zip(states, times):
                    totals[(None, "import", "floor", "synth").index(k)] += calls * t
                for k in states[1:]:  # what the rule saves per run: the paired rounds' median and interval
                    gap = [calls * v for v in rounds.difference(0, states.index(k))]
                    gaps[k] = [a + b for a, b in zip(gaps.get(k, (0.0, 0.0, 0.0)), gap)]
                alone += times[len(states):]
            r.program_s = totals[0]
            r.program_import_s = totals[1] if rules.get("import") is not None else None
            r.program_floor_s = totals[2] if rules.get("floor") is not None else None
            r.program_alone_s = sum(alone) / len(alone) if alone else None
            r.import_gap_s, r.import_gap_lo_s, r.import_gap_hi_s = gaps.get("import", (None, None, None))
            r.floor_gap_s, r.floor_gap_lo_s, r.floor_gap_hi_s = gaps.get("floor", (None, None, None))
            r.program_synth_s = totals[3] if rules.get("synth") is not None else None
            r.synth_gap_s, r.synth_gap_lo_s, r.synth_gap_hi_s = gaps.get("synth", (None, None, None))
        except Exception:  # noqa: BLE001 - this signature's what-if failed (a rule the program rejects): none
            r.forget_program()
        finally:
            for rule in rules.values():
                if rule is not None:
                    remove_rule(rule)


def _synthesized(fn, target: str, types: tuple, args: tuple, kwargs: dict, argnums: tuple) -> tuple:
    """(the rule synthesized for ``fn`` at this signature and the arguments the run traced
    (``argnums``), out of the registry, or None; what became of it: "verified", or why not).
    Verified on the sample before it is timed."""
    try:
        synthesis = synthesize(fn, args, kwargs, wrt=argnums)
        agrees(synthesis, args, kwargs)  # export runs the full check_rule before it writes the rule
        [rule] = register(target, types, synthesis.rule(), source="hand-written",
                          origin="adcli replay: synthesized")
    except SynthesisError as exc:
        return None, f"not synthesized: {exc}"
    except Exception as exc:  # noqa: BLE001 - a synthesized rule that fails its check is not timed, and says why
        return None, f"synthesized, but it failed verification: {type(exc).__name__}: {str(exc)[:300]}"
    remove_rule(rule)
    return rule, "verified"


# How much longer than its budget a signature's what-if may run while the interval of what a
# rule saves is still wide (_wide): up to this many budgets more.
_EXTRA = 2.0


def _wide(states: int):
    """Whether the paired rounds so far leave the saving of some rule too uncertain to judge:
    its 90% interval wider than a tenth of the saving itself and than 2% of the gradient (the
    advisor weighs a saving against a burden of 2-10% of the gradient time)."""
    def more(rounds) -> bool:
        whole = rounds.quantile(0, 0.25)
        for k in range(1, states):
            mid, lo, hi = rounds.difference(0, k)
            if hi - lo > max(0.1 * abs(mid), 0.02 * whole):
                return True
        return False
    return more


def _what_if_rules(stats: SignatureStats, setup) -> dict:
    """{"import": the best agreeing library rule, "floor": a minimal rule, "synth": a user
    function's rule synthesized from its source and verified on the sample (adcli.synth; the
    outcome, or why there is none, in ``Replay.synthesis``)}, built for the signature
    (``setup``: its replay's ``_setup``) and left out of the registry (``_served`` puts one in
    while it is timed)."""
    out: dict = {"import": None, "floor": None, "synth": None}
    if isinstance(setup, Replay) or stats.output not in (None, "value", "tuple"):  # no rule can serve it
        return out
    fn, args, kwargs, argnums, _ = setup
    fn = getattr(fn, "__adcli_original__", fn)  # the function itself, not its dispatch point
    types = stats.signature.key
    target = fn if stats.kind == "numpy" else f"{stats.signature.module}:{stats.signature.qualname}"

    try:
        [out["floor"]] = register(target, types, _minimal(fn, argnums), source="hand-written",
                                  origin="adcli replay: floor")
        remove_rule(out["floor"])
    except (AdcliError, ValueError):
        out["floor"] = None
    if stats.kind != "numpy":
        out["synth"], stats.replay.synthesis = _synthesized(fn, target, types, tuple(args), kwargs, argnums)
    if stats.kind == "numpy" and any(i.outcome is ImportOutcome.AGREES for i in stats.replay.imports):
        try:
            # verified on this very sample by the replay's trial (_imports), moments ago
            [out["import"]] = import_rule(fn, *types, verify=False, example_args=tuple(args),
                                          example_kwargs=dict(kwargs))
            remove_rule(out["import"])
        except (AdcliError, ValueError):
            out["import"] = None
    return out


def _served(rules: dict, kind, grad, args):
    """One gradient with only ``rules[kind]`` registered for its signature (None: neither; the
    rules share one signature, so adding one replaces the other)."""
    def run():
        if kind is None:
            for rule in rules.values():
                if rule is not None:
                    remove_rule(rule)
        else:
            add_rule(rules[kind])
        grad(*args)
    return run


def _floor_rule(sig, fn, argnums):
    """The least a direct rule for a NumPy callable's signature can do: the primal, and one new
    gradient array per argument (zeros); built and left out of the registry (None when a rule is
    declared for the signature already, loaded with --rules). Its time and peak memory
    (``direct_floor_s``, ``direct_bytes``) carry the engine's own per-call cost, as an import's do,
    so an import is compared with it like for like, and a hand-written rule's cost is estimated
    on top of it. A user function has none here: its rules are served through dispatch points,
    which the replay does not rebuild."""
    try:
        [rule] = register(fn, sig.signature.key, _minimal(fn, argnums), source="hand-written",
                          origin="adcli replay: allocation baseline")
    except AdcliError:
        return None
    remove_rule(rule)
    return rule


def _minimal(fn, argnums):
    """The least a rule for ``fn`` can do: its primal, and zero gradients for ``argnums``."""
    def zeros(a):
        # the sample's differentiated arguments get zeros; any other float argument a thunk of
        # them, made only if the call at hand traces it (a function the program calls with
        # different arguments traced: a VAE's network on its data, then on traced latents)
        return lambda g: tuple(zeros_like_tree(v) if i in argnums else _zeros_thunk(v) for i, v in enumerate(a))

    def minimal(*a, **k):
        return fn(*a, **k), zeros(a)
    return minimal


def _zeros_thunk(v):
    """None for an argument without a float in it, else a thunk of its zero cotangent."""
    leaves, _ = flatten(v)
    if not any(type(x) is float or (isinstance(x, (np.ndarray, np.floating)) and np.result_type(x).kind == "f")
               for x in leaves):
        return None
    return lambda: zeros_like_tree(v)


def _floor_pullback(fn, args, kwargs, argnums) -> float | None:
    """Seconds of a minimal rule's pullback alone (``_minimal``: making its zero gradients), on the
    sample: a share of the floors measured with that rule (``direct_floor_s``, ``program_floor_s``)
    which a real rule's pullback replaces by its own work, so the advisor takes it off them."""
    try:
        _, pullback = _minimal(getattr(fn, "__adcli_original__", fn), argnums)(*args, **kwargs)
        seconds, _ = stable_median(lambda: pullback(None), 0.01)
    except Exception:  # noqa: BLE001 - the sample no longer runs plainly: not known
        return None
    return seconds


def zeros_like_tree(a):
    """Zero cotangents shaped like ``a``: an array or float leaf's zeros, None for the rest
    (ints, strings), in ``a``'s dict/list/tuple structure."""
    leaves, unflatten = flatten(a)
    return unflatten([np.zeros_like(v) if isinstance(v, (np.ndarray, np.floating)) and np.result_type(v).kind == "f"
                      else 0.0 if type(v) is float else None for v in leaves])


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


def _imports(sig, fn, args, kwargs) -> tuple[list[ImportTrial], object]:
    """Try the library rule for this callable on the sample: import it for the exact signature
    (verified against finite differences and the derived gradient). The trial, and the rule if
    it agrees, left out of the registry for the replay to time (``rule_s`` filled in then)."""
    try:
        entry = find(fn)
    except AdcliError:
        return [], None
    name = f"autograd {entry.name}"
    if entry.refusal:
        return [ImportTrial(name, ImportOutcome.FAILED, error=entry.refusal)], None
    try:
        rules = import_rule(fn, *sig.signature.key, example_args=tuple(args), example_kwargs=dict(kwargs))
    except RuleDisagreement as exc:
        return [ImportTrial(name, ImportOutcome.DISAGREES, error=str(exc))], None
    except AdcliError as exc:
        return [ImportTrial(name, ImportOutcome.FAILED, error=str(exc))], None
    unimport(*rules)
    trial = ImportTrial(name, ImportOutcome.AGREES, verification=getattr(rules[0], "verification", ""))
    return [trial], rules[0]
