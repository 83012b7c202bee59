"""Choose the rule set in two tiers and explain it (docs/advisor.md).

For a signature served by a derived rule, with derived cost D per call, primal P, and calls c:

* **import**: a library rule that agreed with the derived gradient on the samples, measured
  cost R: saving c * (D - R);
* **hand-write**: estimated cost H from the decomposition of D (costs.Cost): the primal with
  the engine's cost of one rule call, plus the pullbacks' work that scales with data; saving
  c * (D - H), marked as estimated;
* **keep derived** otherwise.

An action is worth it when its saving is at least its burden: a share of the total gradient
time, lower for an import, and growing with the size of a hand-written rule.

Tier 1, **library** (NumPy and SciPy callables): each signature on its own, since its rule
serves every program. Tier 2, **user functions**: what is left once the library tier is
applied (a user function is never credited with what an import inside it saves), chosen over
the merged call tree, preferring the innermost functions that together save ``nest_share`` of
what their caller's rule would.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..engine.signature import Signature
from ..profiler.model import Profile
from ..units import duration, human_bytes
from .config import Thresholds
from .costs import Cost, aggregate, calibrate, merged_tree, plain_times, walk

ACTIONS = ("hand-write", "import", "keep-derived")
HAND_WRITE, IMPORT, KEEP_DERIVED = ACTIONS
TIERS = ("library", "user")
LIBRARY, USER = TIERS
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
    tier: str = USER
    decomposition: dict | None = None  # derived_s split: primal_s, pullback_s, machinery_s, ...

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
    saving: float | None = None  # per call, measured in the program (Cost.in_program); else (D - cost) * scale

    def per_call(self, c: Cost) -> float:
        """What the rule saves per call of ``c``, in the advisor's seconds."""
        return self.saving if self.saving is not None else (c.derived_s - self.cost) * c.scale


def _parts(c: Cost) -> str | None:
    """The decomposition of the derived cost, as a clause of a reason."""
    if not c.decomposed:
        return None
    return (f"derived {duration(c.derived_s)} per call = {duration(c.primal_s)} primal + {duration(c.pullback_s)} "
            f"pullbacks ({c.nodes} tape nodes) + {duration(c.machinery_s)} engine machinery")


def _hand_cost(c: Cost, factor: float, basis: str) -> tuple[float | None, str]:
    """A hand-written rule's estimated cost per call, and how it was estimated."""
    P = c.primal_s
    if c.decomposed:
        floor = max(c.direct_floor_s - c.zeros_s, P) if c.direct_floor_s else P + c.rule_call_s
        scalar, pullback = c.scalar_primal, c.hand_pullback
        hand = max(floor + pullback - scalar, 0.0)
        how = (f"measured with a minimal rule, less the {duration(c.zeros_s)} its pullback takes to make zero gradients"
               if c.direct_floor_s else f"the primal + {duration(c.rule_call_s)} per rule call")
        vectorised = (f" - {duration(scalar)} of the primal's per-operation cost, which its forward pass can vectorise "
                      "as well (a map: rewrite the exported forward to get it)") if scalar > 0.05 * hand else ""
        if c.recurrent:
            vectorised = (f"; a recurrence (its critical path runs through {c.chain} of its {c.nodes} tape nodes: each "
                          "step needs the last), so a rule's forward and pullback take a call per step, as the primal does")
        rest, lean = c.pullback_s - pullback, c.lean_s
        data = (f"{duration(lean)} of the {duration(c.vector_pullback_s)} of NumPy work that scales with data: a "
                "closed form needs no more for an elementwise operation or a reduction than its forward pass did"
                if lean < 0.99 * c.vector_pullback_s else f"{duration(c.vector_pullback_s)} of NumPy work that scales with data")
        return hand, (f"a hand-written rule is estimated at {duration(hand)} per call: {duration(floor)} to serve the "
                      f"primal ({how}) + {duration(pullback)} of pullback work ({data}, and NumPy's per-call cost once "
                      f"per distinct operation (kind and shape), at most one call per differentiated argument: "
                      f"{c.operations} for {c.nodes} tape nodes; the other {duration(rest)} of "
                      f"the pullbacks is the engine's accumulation, repeated per-operation cost and the generic VJPs' "
                      f"extra passes, which a rule does not pay){vectorised}")
    # a profile without the decomposition: the floor of serving any rule plus the rest of its
    # work scaled from the primal, with the factor calibrated on the measured imports
    if P and c.direct_floor_s:
        hand = c.direct_floor_s + max(factor - 1.0, 0.0) * P
    else:
        hand = factor * P if P else None
    return hand, f"a hand-written rule is estimated at {duration(hand)} per call ({basis})"


def _options(c: Cost, factor: float, basis: str, th: Thresholds, total: float) -> tuple[list, list]:
    """The actions open to one derived signature, and reasons for those closed."""
    opts, notes = [], []
    D, P = c.derived_s, c.primal_s
    if c.output not in (None, "value", "tuple"):
        what = {"None": "None", "object": "an object"}.get(c.output, f"a {c.output}")
        notes.append(f"it returns {what}, "
                     "and a rule returns an array, a number or a tuple of them: no rule can serve it (a function "
                     "it calls, or one that calls it, can have one)")
        return opts, notes
    hand, hand_text = _hand_cost(c, factor, basis)
    prog = _in_program(c)  # (derived, with the import, with a hand-written rule) per call, or None
    if prog is not None and prog[2] is not None:
        hand_text += (f"; in the program, the gradients that call it take {duration(prog[0] * c.calls)} per run, "
                      f"{duration(c.program_floor_s * c.program_scale)} with a minimal rule for it (its primal, zero "
                      "gradients; timed in "
                      f"turn; {duration(c.zeros_s * c.calls)} of it making the zeros, which the pullback work replaces), "
                      f"so a hand-written rule is estimated to leave {duration(prog[2] * c.calls)}")
        if abs(c.tempo - 1.0) > 0.1:
            hand_text += (f" (the pullback work counted at the pace of those rounds, x{c.tempo:.2f} its replay's: its own "
                          "gradient was timed in them too)")
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
        elif prog is not None and prog[1] is not None and prog[2] is not None \
                and D - (prog[0] - prog[1]) > th.import_tolerance * max(D - (prog[0] - prog[2]), c.rule_call_s or 0.0):
            # per call of the signature in the program: derived D less what each rule saves there (a
            # rule costs at least one rule call: a smaller estimate is noise)
            notes.append(f"in the program, {best.rule} costs {duration(D - (prog[0] - prog[1]))} per call, over "
                         f"{th.import_tolerance:g}x the "
                         f"{duration(max(D - (prog[0] - prog[2]), c.rule_call_s or 0.0))} a hand-written "
                         "rule is estimated to cost there: "
                         "importing is not the best way")
        elif R > D and not (prog is not None and prog[1] is not None and prog[0] - prog[1] >= CLEAR_SAVING * prog[0]):
            # the program's what-if can come out even (its gradient does other work; the allocator's
            # state moves the cost of big temporaries): an import slower than the derived rule alone
            # is no saving an expert would sign, unless the program clearly gains from it (the pair
            # timed alone is one noisy sample; 10% of the program's gradient time is not noise)
            notes.append(f"{best.rule} is slower than the derived rule timed alone ({duration(R)} per call against "
                         f"{duration(D)}): importing is not the best way")
        elif (prog is None or prog[1] is None) and hand is not None and R > th.import_tolerance * hand:
            notes.append(f"{best.rule} is measured at {duration(R)} per call, over {th.import_tolerance:g}x the "
                         f"{duration(hand)} a direct rule is estimated to cost: importing is not the best way")
        else:
            text = (f"{best.rule} agrees with the derived gradient on the samples and measures {duration(R)} per call "
                    f"against {duration(D)} derived")
            if prog is not None and prog[1] is not None:
                text += (f"; in the program, the gradients that call it take {duration(prog[1] * c.calls)} per run "
                         f"with it against {duration(prog[0] * c.calls)} derived (timed in turn)")
            opts.append(_Option(IMPORT, R, True, best.rule, th.import_burden * total, [text], peak,
                                None if prog is None or prog[1] is None else prog[0] - prog[1]))
    elif not c.imports:
        notes.append("no library rule exists for this callable" if c.kind == "numpy" else
                     "a user function: no library rule can exist")
    if hand is not None:
        scale = 1.0 + c.size / th.burden_size
        opts.append(_Option(HAND_WRITE, hand, False, None, th.handwrite_burden * scale * total,
                            [hand_text + ("" if c.decomposed else f"; derived costs {duration(D)}, primal {duration(P)}"),
                             f"its burden is {th.handwrite_burden * scale:.0%} of the gradient time: "
                             f"{th.handwrite_burden:.0%} x (1 + size {c.size:.0f} / {th.burden_size:g}), the size being "
                             f"{c.operations or 1} operation(s) + {c.arguments} argument(s) + {c.lines or 0} line(s) / 5"],
                            saving=None if prog is None or prog[2] is None else prog[0] - prog[2]))
    elif not c.measured and c.replay_error:
        notes.append(f"its replay measured nothing ({c.replay_error}), so its primal cost is unknown and a "
                     "hand-written rule cannot be estimated")
    elif not c.measured:
        notes.append("it was not replayed (outside the signatures covering most of the time), so its primal cost "
                     "is unknown and a hand-written rule cannot be estimated")
    return opts, notes


# an import's saving in the program, as a share of the program's gradient time, that outweighs
# the import's being slower than the derived rule when the two are timed alone
CLEAR_SAVING = 0.10


def _in_program(c: Cost) -> tuple | None:
    """Per call of ``c``, in the program: (derived, with its library rule imported or None, with
    a hand-written rule or None). The hand-written rule is the measured minimal rule (its primal,
    zero gradients) plus the pullback work that scales with data, less the forward's share of
    per-operation cost, which a rule's forward pass can vectorise like its pullback
    (docs/advisor.md § What is estimated). None unless the program was measured."""
    if not c.in_program or not c.calls:
        return None
    k = c.program_scale / c.calls
    derived = c.program_s * k
    imported = None if c.program_import_s is None else c.program_import_s * k
    hand = None
    if c.program_floor_s is not None and c.decomposed:
        hand = max(c.program_floor_s * k + (c.hand_pullback - c.scalar_primal - c.zeros_s) * c.tempo, 0.0)
    return derived, imported, hand


def _best(c: Cost, opts: list, calls: int, credited: float = 0.0, cap: float = float("inf")):
    """The option with the largest net saving (gain - burden) over ``calls`` calls, less what
    the library tier already saves inside them (``credited``), never more than ``cap`` (the
    gradient time: estimates from replays timed at other moments than the program can add up
    to more): (option, gain, net) or None."""
    out = None
    for opt in opts:
        gain = min(calls * opt.per_call(c), cap) - credited
        net = gain - opt.burden
        if net >= 0 and gain > 0 and (out is None or net > out[2]):
            out = (opt, gain, net)
    return out


def suggest(profiles: list[Profile], th: Thresholds | None = None, sort: str = "saving") -> tuple[list[Suggestion], dict]:
    """Suggestions for every derived signature (keep-derived ones included), library tier
    first, best first within a tier, and a summary dict."""
    th = th or Thresholds()
    costs, profiled = aggregate(profiles)
    tree = merged_tree(profiles)
    # Seconds of the program without the profiler when every function handed to grad was
    # replayed (then replayed and in-program costs weigh against it as they are), else the
    # profiled run's, each replayed cost scaled by its signature's live time over its replay's.
    plain, roots = plain_times(costs, tree)
    total = plain or profiled
    for name, c in costs.items():
        c.replayed_units = bool(plain)
        c.in_program = bool(plain) and bool(c.program_s) and name in roots
        c.program_scale = roots[name] / c.program_s if c.in_program else 1.0
    factor, basis = calibrate(costs, th.fallback_factor)
    derived = {s: c for s, c in costs.items() if c.served_by == "derived" and c.derived_s is not None}
    options = {s: _options(c, factor, basis, th, total) for s, c in derived.items()}

    # Tier 1: library signatures, each on its own (its rule serves every call, in every program).
    library = {s: _best(c, options[s][0], c.calls, cap=total) for s, c in derived.items() if c.kind == "numpy"}
    programs = _library_per_program(profiles, th) if len(profiles) > 1 else {}
    for s, worth in programs.items():  # worth its burden in one program: worth shipping for all
        c = derived.get(s)
        opt = next((o for o in options[s][0] if o.action == worth[0][1]), None) if c is not None else None
        if opt is not None and library.get(s) is None:
            gain = c.calls * opt.per_call(c)
            library[s] = (opt, gain, gain - opt.burden)
    per_call = {s: library[s][0].per_call(c) for s, c in derived.items() if library.get(s)}

    # Tier 2: user functions, on what the library tier leaves. Bottom-up: a node's _value is the
    # best net saving of user-tier rules in its subtree and the library saving inside it; a node's
    # own rule wins unless the rules inside it save at least nest_share of its own (smaller rules
    # are the lighter burden), or more.

    # One walk of the merged tree, children before their callers (iterative: a 1500-deep
    # recursion in the program is a 1500-deep tree), and every node of a signature found by
    # name from then on: the advice is linear in the tree's size, whatever its depth.
    post = walk(tree)[::-1]
    nodes: dict = {}  # signature -> its nodes in the merged tree
    for name, node in post:
        nodes.setdefault(name, []).append(node)
        below = inside = 0.0
        for child in node["children"].values():
            below, inside = below + child["_value"][0], inside + child["_value"][1]
        node["_pick"], node["_inside"] = None, inside
        if name in per_call:
            inside += node["calls"] * per_call[name]
        node["_value"] = (below, inside)
        c = derived.get(name)
        if c is not None and c.kind != "numpy":
            own = _best(c, options[name][0], node["calls"], node["_inside"], total)
            if own is not None and own[2] >= below and below < th.nest_share * own[2]:
                node["_pick"] = own
                node["_value"] = (own[2], inside)

    # Top-down: take a node's own rule where it won, else look inside it.
    chosen: dict = {}  # signature -> (option, calls, gain), summed over the tree nodes chosen
    covered: dict = {}  # signature -> the chosen caller that makes a rule for it moot
    passed: dict = {}  # signature -> (its own best (option, gain, net), what the rules inside it save)
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
            c = derived.get(name)
            if c is not None and c.kind != "numpy":
                own = _best(c, options[name][0], node["calls"], node["_inside"], total)
                if own is not None:
                    passed.setdefault(name, own)
            stack.extend((k, v, None) for k, v in node["children"].items())

    out = []
    for name, c in derived.items():
        opts, notes = options[name]
        tier = LIBRARY if c.kind == "numpy" else USER
        if tier == LIBRARY:
            pick = library.get(name)  # (option, gain, net)
        elif name in chosen:
            pick = (chosen[name][0], chosen[name][2], None)
        else:
            pick = None
        parts = _parts(c)
        lead = [parts] if parts else []
        if not c.in_program and c.measured and c.live_s and c.derived_s and c.live_s < 0.5 * c.derived_s:
            slower = c.derived_s / c.live_s
            lead.append(f"WARNING: its replay took {duration(c.derived_s)} per call, {slower:.1f}x its "
                        f"{duration(c.live_s)} per call in the run, profiler and all: the replay may overstate its cost")
        if pick is not None:
            opt, gain = pick[0], pick[1]
            credit = ""
            if tier == USER and name in chosen:
                inside = sum(n["_inside"] for n in nodes.get(name, ()))
                if inside > 0:
                    credit = f", after the {duration(inside)} the library rules inside it save"
            if name in programs:  # judged program by program (_library_per_program)
                share, _, command = max(programs[name])
                verdict = [f"saves {duration(gain)} per run of all {len(profiles)} programs ({gain / total:.0%} of "
                           f"their gradient time); worth its burden in {len(programs[name])} of them on its own, up to "
                           f"{share:.0%} of one's gradient time ({command}): a library rule serves them all"]
            else:
                verdict = [f"saves {duration(gain)} per run ({gain / total:.0%} of the gradient time{credit}) against a "
                           f"burden of {opt.burden / total:.0%}"]
            if gain >= total * (1 - 1e-9):
                verdict.append("its estimate came to the whole gradient time or more (replays timed at other moments "
                               "than the program's, on a machine whose speed varies): counted as the whole")
            reasons = lead + opt.reasons + verdict + notes
            out.append(_suggestion(c, opt.action, opt, gain, total, reasons, tier))
            continue
        reasons = lead + list(notes)
        if name in covered:
            reasons.insert(len(lead), f"a rule suggested for its caller {covered[name]} covers it")
        elif name in passed:
            own = passed[name]
            kind = "a hand-written" if own[0].action == HAND_WRITE else "an imported"
            reasons.insert(len(lead), f"{kind} rule for it would save {duration(own[1])} per run, but the "
                                      "rules suggested for the functions it calls save at least "
                                      f"{th.nest_share:.0%} of that: smaller rules are the lighter burden")
        elif opts:
            credited = sum(n["_inside"] for n in nodes.get(name, ())) if tier == USER else 0.0
            bestopt = max(opts, key=lambda o: o.per_call(c))
            saving = c.calls * bestopt.per_call(c) - credited
            if saving <= 0:
                def effect(o) -> str:
                    d = o.per_call(c)
                    return (f"{o.action} {'saves' if d > 0 else 'costs'} {duration(abs(d))} per call"
                            f"{' more' if d <= 0 else ''}{'' if o.measured else ' (estimated)'}")
                after = f", less the {duration(credited)} the library rules inside it save," if credited > 0 else ""
                reasons.insert(len(lead), f"no rule would save time against the derived {duration(c.derived_s)} per call"
                                          f"{after} in the program (considered: {'; '.join(effect(o) for o in opts)})")
            else:
                after = f" after the {duration(credited)} the library rules inside it save" if credited > 0 else ""
                reasons.insert(len(lead), f"the best action ({bestopt.action}) would save at most {duration(saving)} per "
                                          f"run ({saving / total:.0%}){after}, below its burden of {bestopt.burden / total:.0%}")
        out.append(_suggestion(c, KEEP_DERIVED, None, 0.0, total, reasons, tier))
    keys = {"saving": lambda s: (-s.saving_s, -(s.derived_s or 0) * s.calls),
            "time": lambda s: -(s.derived_s or 0) * s.calls,
            "allocations": lambda s: -s.allocs_derived_bytes}
    out.sort(key=lambda s: (s.action == KEEP_DERIVED, s.tier != LIBRARY, keys[sort](s)))
    for i, s in enumerate(out, 1):
        s.rank = i
    return out, {"gradient_s": total, "profiled_s": profiled, "replayed": bool(plain), "factor": factor,
                 "factor_basis": basis, "profiles": len(profiles),
                 "signatures": len(costs), "derived": len(derived),
                 "decomposed": sum(c.decomposed for c in derived.values())}


def _library_per_program(profiles: list[Profile], th: Thresholds) -> dict:
    """Library signature -> [(share, action, program)] for each profile, advised on its own, in
    which a rule for it is worth its burden: a library rule is shipped once and serves every
    program, so the programs it helps much are not outvoted by the others' gradient time."""
    out: dict = {}
    for p in profiles:
        for x in suggest([p], th)[0]:
            if x.tier == LIBRARY and x.action != KEEP_DERIVED:
                out.setdefault(x.signature, []).append((x.share, x.action, " ".join(p.command)[:60] or "?"))
    return out


def _suggestion(c: Cost, action: str, opt, gain: float, total: float, reasons: list, tier: str) -> Suggestion:
    return Suggestion(
        rank=0, signature=c.signature, action=action, calls=c.calls,
        derived_s=c.derived_s, primal_s=c.primal_s,
        # per call: what the rule leaves in the program when that was measured, else alone
        rule_s=None if opt is None else opt.cost if opt.saving is None else max(c.derived_s - opt.saving, 0.0),
        rule_measured=bool(opt and opt.measured),
        saving_s=gain, share=gain / total if total else 0.0,
        allocs_derived_bytes=int(c.alloc_per_call),
        allocs_rule_bytes=None if opt is None else (opt.peak_bytes if opt.action == IMPORT else c.direct_bytes),
        reasons=reasons, rule=None if opt is None else opt.rule, tier=tier,
        decomposition=None if not c.decomposed else {
            "primal_s": c.primal_s, "pullback_s": c.pullback_s, "vector_pullback_s": c.vector_pullback_s,
            "work_s": c.work_s, "lean_pullback_s": c.lean_s,
            "machinery_s": c.machinery_s, "nodes": c.nodes, "operations": c.operations, "lines": c.lines},
    )
