"""Choose the rule set over the call tree and explain it (docs/advisor.md).

For a signature served by a derived rule, with derived cost D per call, primal P, and calls c:

* **import**: a library rule that agreed with the derived gradient on the samples, measured
  cost R: saving c * (D - R);
* **hand-write**: estimated cost H = factor * P (factor calibrated on the imports measured in
  the same profiles, costs.calibrate): saving c * (D - H), marked as estimated;
* **keep derived** otherwise.

An action is worth it when its saving is at least its burden (a share of the total gradient
time, lower for an import than for a hand-written rule). A rule on a caller makes rules on its
callees moot, so the set is chosen by a dynamic program over the merged call tree:
best(node) = max(gain(node) - burden(node), sum of best(child)).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..engine.signature import Signature
from ..profiler.model import Profile
from ..units import duration, human_bytes
from .config import Thresholds
from .costs import Cost, aggregate, calibrate, merged_tree

ACTIONS = ("hand-write", "import", "keep-derived")
HAND_WRITE, IMPORT, KEEP_DERIVED = ACTIONS
SORTS = ("saving", "time", "allocations")


@dataclass
class Suggestion:
    """One ranked piece of advice (the JSON contract of ``adcli suggest --format json``)."""

    rank: int
    signature: Signature
    action: str
    calls: int
    derived_s: float | None
    primal_s: float | None
    rule_s: float | None
    rule_measured: bool
    saving_s: float
    share: float
    allocs_derived_bytes: int
    allocs_rule_bytes: int | None
    reasons: list = field(default_factory=list)
    rule: str | None = None

    @property
    def function(self) -> str:
        return self.signature.function

    def to_dict(self) -> dict:
        """The JSON contract: the signature as its text, the function's name alongside."""
        d = asdict(self)
        d["signature"] = str(self.signature)
        d["function"] = self.function
        return d


@dataclass
class _Option:
    action: str
    cost: float  # per call
    measured: bool
    rule: str | None
    burden: float  # seconds per program run
    reasons: list
    peak_bytes: int | None = None  # an import's measured peak memory per call


def _options(c: Cost, factor: float, basis: str, th: Thresholds, total: float) -> tuple[list, list]:
    """The actions open to one derived signature, and reasons for those closed."""
    opts, notes = [], []
    D, P = c.derived_s, c.primal_s
    # a hand-written rule: the measured floor of serving any rule for this call (the primal, one
    # gradient array per argument, the engine's per-call cost) plus the rest of its work, scaled
    # from the primal; without a measured floor, factor * P
    if P and c.direct_floor_s:
        hand = c.direct_floor_s + max(factor - 1.0, 0.0) * P
    else:
        hand = factor * P if P else None
    best = c.best_import()
    for bad in c.disagreeing_imports():
        notes.append(f"WARNING: {bad.rule} disagrees with the derived gradient on the samples ({bad.error or ''}); "
                     "one of them is wrong, so it is not suggested")
    if best is not None:
        R = best.rule_s
        peak = best.rule_peak_bytes
        if isinstance(peak, int) and c.direct_bytes and peak > th.alloc_tolerance * c.direct_bytes:
            notes.append(f"{best.rule} allocates {human_bytes(peak)} at peak per call, over {th.alloc_tolerance:g}x the "
                         f"{human_bytes(c.direct_bytes)} of the same gradient served by a minimal direct rule (its output and "
                         "one gradient per argument): importing is not the best way")
        elif hand is not None and R > th.import_tolerance * hand:
            notes.append(f"{best.rule} is measured at {duration(R)} per call, over {th.import_tolerance:g}x the "
                         f"{duration(hand)} a direct rule is estimated to cost ({basis}): importing is not the best way")
        else:
            opts.append(_Option(IMPORT, R, True, best.rule, th.import_burden * total,
                                [f"{best.rule} agrees with the derived gradient on the samples and measures "
                                 f"{duration(R)} per call against {duration(D)} derived"], peak))
    elif not c.imports:
        notes.append("no library rule exists for this callable" if c.kind == "numpy" else
                     "a user function: no library rule can exist")
    if hand is not None:
        opts.append(_Option(HAND_WRITE, hand, False, None, th.handwrite_burden * total,
                            [f"a hand-written rule is estimated at {duration(hand)} per call ({basis}); "
                             f"derived costs {duration(D)}, primal {duration(P)}"]))
    elif not c.measured and c.replay_error:
        notes.append(f"its replay measured nothing ({c.replay_error}), so its primal cost is unknown and a "
                     "hand-written rule cannot be estimated")
    elif not c.measured:
        notes.append("it was not replayed (outside the signatures covering most of the time), so its primal cost "
                     "is unknown and a hand-written rule cannot be estimated")
    return opts, notes


def suggest(profiles: list[Profile], th: Thresholds | None = None, sort: str = "saving") -> tuple[list[Suggestion], dict]:
    """Suggestions for every derived signature (keep-derived ones included), best first, and a
    summary dict (total gradient time, the hand-write factor and its basis)."""
    th = th or Thresholds()
    costs, total = aggregate(profiles)
    factor, basis = calibrate(costs, th.fallback_factor)
    derived = {s: c for s, c in costs.items() if c.served_by == "derived" and c.derived_s is not None}
    options = {s: _options(c, factor, basis, th, total) for s, c in derived.items()}
    tree = merged_tree(profiles)

    # Pass 1 (bottom-up, no side effects): value(node) = max(net(node), sum of value(children)),
    # remembering which side won.
    def value(name: str, node: dict) -> float:
        below = sum(value(k, v) for k, v in node["children"].items())
        node["_pick"] = None
        if name in options:
            c = derived[name]
            for opt in options[name][0]:
                gain = node["calls"] * (c.derived_s - opt.cost)
                net = gain - opt.burden
                if net >= 0 and net >= below and (node["_pick"] is None or net > node["_pick"][2]):
                    node["_pick"] = (opt, gain, net)
        return node["_pick"][2] if node["_pick"] is not None else below

    for name, node in tree["children"].items():
        value(name, node)

    # Pass 2 (top-down): take a node's own rule where it won, else look at its children.
    chosen: dict = {}  # signature -> (option, calls, gain), summed over the tree nodes chosen
    covered: dict = {}  # signature -> the chosen caller that makes a rule for it moot
    stack = [(k, v, None) for k, v in tree["children"].items()]
    while stack:
        name, node, owner = stack.pop()
        if owner is not None:
            covered.setdefault(name, owner)
            stack.extend((k, v, owner) for k, v in node["children"].items())
            continue
        if node["_pick"] is not None:
            opt, gain, _ = node["_pick"]
            prev = chosen.get(name)
            chosen[name] = (opt, node["calls"] + (prev[1] if prev else 0), gain + (prev[2] if prev else 0.0))
            stack.extend((k, v, name) for k, v in node["children"].items())
        else:
            stack.extend((k, v, None) for k, v in node["children"].items())

    out = []
    for name, c in derived.items():
        opts, notes = options[name]
        if name in chosen:
            opt, calls, gain = chosen[name]
            reasons = opt.reasons + [f"saves {duration(gain)} per run ({gain / total:.0%} of the gradient time) against a "
                                     f"burden threshold of {opt.burden / total:.0%}"] + notes
            out.append(_suggestion(c, opt.action, opt, gain, total, reasons))
        else:
            reasons = list(notes)
            if name in covered:
                reasons.insert(0, f"a rule suggested for its caller {covered[name]} covers it")
            elif opts:
                bestopt = max(opts, key=lambda o: c.calls * (c.derived_s - o.cost))
                saving = c.calls * (c.derived_s - bestopt.cost)
                if saving <= 0:
                    considered = "; ".join(f"{o.action} {duration(o.cost)}{'' if o.measured else ' (estimated)'}" for o in opts)
                    reasons.insert(0, f"no rule would be faster than the derived {duration(c.derived_s)} per call "
                                      f"(considered: {considered})")
                elif saving >= bestopt.burden:
                    reasons.insert(0, f"a {bestopt.action} rule would save {duration(saving)} per run ({saving / total:.0%}), "
                                      "but the rules suggested for the calls inside it save more (one or the other, "
                                      "never both)")
                else:
                    reasons.insert(0, f"the best action ({bestopt.action}) would save {duration(saving)} per run "
                                      f"({saving / total:.0%}), below its burden threshold of {bestopt.burden / total:.0%}")
            out.append(_suggestion(c, KEEP_DERIVED, None, 0.0, total, reasons))
    keys = {"saving": lambda s: (-s.saving_s, -(s.derived_s or 0) * s.calls),
            "time": lambda s: -(s.derived_s or 0) * s.calls,
            "allocations": lambda s: -s.allocs_derived_bytes}
    out.sort(key=lambda s: (s.action == KEEP_DERIVED, keys[sort](s)))
    for i, s in enumerate(out, 1):
        s.rank = i
    return out, {"gradient_s": total, "factor": factor, "factor_basis": basis, "profiles": len(profiles),
                 "signatures": len(costs), "derived": len(derived)}


def _suggestion(c: Cost, action: str, opt, gain: float, total: float, reasons: list) -> Suggestion:
    return Suggestion(
        rank=0, signature=c.signature, action=action, calls=c.calls,
        derived_s=c.derived_s, primal_s=c.primal_s,
        rule_s=None if opt is None else opt.cost, rule_measured=bool(opt and opt.measured),
        saving_s=gain, share=gain / total if total else 0.0,
        allocs_derived_bytes=int(c.alloc_per_call),
        allocs_rule_bytes=None if opt is None else (opt.peak_bytes if opt.action == IMPORT else c.direct_bytes),
        reasons=reasons, rule=None if opt is None else opt.rule,
    )
