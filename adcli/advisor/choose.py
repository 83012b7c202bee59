"""Choose the rule set and explain it (docs/advisor.md): profiles -> costs (costs.py) -> the
options of each derived signature (options.py) -> the two tiers chosen over the call tree
(tiers.py) -> :class:`Suggestion` objects with their reasons (explain.py).

An action is worth it when its saving is at least its burden: a share of the total gradient
time, lower for an import, and growing with the size of a hand-written rule. A saving is a
range when the program's what-if was repeated: an action is advised only when the whole range
clears the burden, and one whose range straddles it is reported as uncertain.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..data.model import Profile
from ..engine.signature import Signature
from ..units import duration
from . import explain
from .config import Thresholds
from .costs import Cost, aggregate, calibrate, plain_times
from .options import HAND_WRITE, IMPORT, Span, as_written, hand_estimate, in_program, options
from .tiers import Pick, UserChoice, best, call_tree, choose_user, nest_consistently, top_down, walk

KEEP_DERIVED = "keep-derived"
ACTIONS = (HAND_WRITE, IMPORT, KEEP_DERIVED)
TIERS = ("library", "user")
LIBRARY, USER = TIERS
SORTS = ("saving", "time", "allocations")
# How many user functions under a target the burden counts by name at most (a deep chain of
# distinct calls would otherwise make the count quadratic in the tree's depth).
MAX_CALLEES = 64


@dataclass
class Suggestion:
    """One ranked piece of advice (the JSON contract of ``adcli suggest --format json``)."""

    rank: int
    signature: Signature
    action: str
    calls: int
    derived_s: float | None
    primal_s: float | None
    rule_s: float | None  # per call: the number the reasons give
    rule_measured: bool
    saving_s: float
    share: float
    allocs_derived_bytes: int
    allocs_rule_bytes: int | None
    reasons: list = field(default_factory=list)
    rule: str | None = None
    tier: str = USER
    decomposition: dict | None = None  # derived_s split: primal_s, pullback_s, machinery_s, ...
    saving_low_s: float | None = None  # the interval of saving_s (equal to it when not repeated)
    saving_high_s: float | None = None
    burden_share: float | None = None  # the action's burden, as a share of the gradient time
    uncertain: bool = False  # an action's saving straddles its burden: kept derived, said so
    alternative_to: str | None = None  # a lighter rule inside the target suggested for this caller
    lines: int | None = None  # the source lines a hand-written rule re-implements (its own and callees')
    callees: int | None = None  # the user functions under it without a rule of their own
    recurrence: bool | None = None  # its operations form a recurrence (None: not measured)
    # a hand-write's saving with its forward as the program wrote it (the exported skeleton's):
    # the other end of the range saving_s spans when a lean forward is credited (None: no such credit)
    saving_written_s: float | None = None
    close_call: str | None = None  # the caller whose own rule was passed over for this one by a close call
    # a hand-write's rule synthesized from its source and verified (adcli.synth; `adcli export
    # --script` writes it): what it saved per run in the program, measured (median, 90% interval),
    # saving_s being the estimate for a rule optimised by hand; ``synthesis``: "verified" or why none
    synthesized_saving_s: float | None = None
    synthesized_saving_low_s: float | None = None
    synthesized_saving_high_s: float | None = None
    synthesis: str | None = None

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
class AdviceSummary:
    """What the advice was made from: the gradient time it weighs savings against, and how."""

    gradient_s: float  # without the profiler when every root was replayed, else profiled
    profiled_s: float
    replayed: bool
    factor: float  # a hand-written rule's cost over its primal, without a decomposition
    factor_basis: str
    profiles: int
    signatures: int
    derived: int
    decomposed: int
    problems: list = field(default_factory=list)  # what makes the profiles incomplete (app.advice)


def suggest(profiles: list[Profile], th: Thresholds | None = None,
            sort: str = "saving") -> tuple[list[Suggestion], AdviceSummary]:
    """Suggestions for every derived signature (keep-derived ones included), best first."""
    th = th or Thresholds()
    costs, profiled = aggregate(profiles)
    tree = call_tree(profiles)
    nest_consistently(costs, tree)
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
    under = _under(tree, costs)
    hands = {s: hand_estimate(c, factor, basis) for s, c in derived.items()}
    progs = {s: in_program(c) for s, c in derived.items()}
    lines = _function_lines(costs)
    opened = {s: options(c, hands[s], progs[s], th, total, *_burden_lines(c, under.get(s, ()), lines))
              for s, c in derived.items()}
    opts = {s: o for s, (o, _) in opened.items()}

    # Tier 1: library signatures, each on its own (its rule serves every call, in every program).
    library = {s: best(c, opts[s], c.calls, cap=total) for s, c in derived.items() if c.kind == "numpy"}
    programs = _library_per_program(profiles, th) if len(profiles) > 1 else {}
    for s, worth in programs.items():  # worth its burden in one program: worth shipping for all
        c = derived.get(s)
        opt = next((o for o in opts[s] if o.action == worth[0][1]), None) if c is not None else None
        if opt is not None and library.get(s, (None,))[0] is None:
            library[s] = (Pick(opt, opt.per_call(c).times(c.calls), c.calls), None)
    per_call = {s: library[s][0].option.per_call(c).point for s, c in derived.items() if library.get(s, (None,))[0]}

    # Tier 2: user functions, on what the library tier leaves.
    choose_user(tree, derived, opts, per_call, th.nest_share, total)
    user = top_down(tree, derived, opts, total)
    alternatives = _alternatives(tree, derived, opts, user, total)

    out = []
    for name, c in derived.items():
        closed = [explain.closed(n, th) for n in opened[name][1]]
        lead = [p for p in (explain.parts(c), explain.below_callees(c), explain.replay_warning(c)) if p]
        tier = LIBRARY if c.kind == "numpy" else USER
        sure, unsure = library.get(name, (None, None)) if tier == LIBRARY else (user.chosen.get(name), None)
        if tier == USER and sure is None and name not in user.covered and name not in user.passed:
            unsure = best(c, opts[name], c.calls, user.inside.get(name, 0.0), total)[1]
        alt = alternatives.get(name)
        if sure is not None or alt is not None:
            pick = sure if sure is not None else alt[1]
            credited = user.inside.get(name, 0.0) if tier == USER else 0.0
            written = None  # the other end of a hand-write's range: its forward as written
            if pick.option.action == HAND_WRITE and hands[name].vectorised_s > 0:
                written = min(c.calls * as_written(c, hands[name], progs[name]), pick.gain.point)
            reasons = _chosen(c, pick, total, credited, progs[name], hands[name], programs.get(name), len(profiles),
                              written)
            if alt is not None and sure is None:
                reasons.insert(1, explain.alternative_to(alt[0]))
            reasons += [explain.alternative(a, p, total) for a, p in _lighter(name, alternatives)]
            if name in user.close_to:
                caller = user.close_to[name]
                reasons.append(explain.close_call(caller, user.passed[caller], total))
            out.append(_suggestion(c, pick.option.action, pick, total, reasons[:1] + lead + reasons[1:] + closed, tier,
                                   alternative_to=None if alt is None or sure else str(alt[0]), written=written,
                                   close_call=str(user.close_to[name]) if name in user.close_to else None))
            continue
        reasons = _kept(c, name, opts[name], user, unsure, tier, total, th)
        out.append(_suggestion(c, KEEP_DERIVED, unsure, total, reasons[:1] + lead + reasons[1:] + closed, tier,
                               uncertain=unsure is not None))
    keys = {"saving": lambda s: (-s.saving_s, -(s.derived_s or 0) * s.calls),
            "time": lambda s: -(s.derived_s or 0) * s.calls,
            "allocations": lambda s: -s.allocs_derived_bytes}
    # actions first, the largest saving first whatever the tier (a library rule serves every program,
    # but a user function saving 80% is the place to start over a library one saving 26%);
    # alternatives right after the rule they stand in for
    out.sort(key=lambda s: (s.action == KEEP_DERIVED, keys[sort](s)))
    out = _alternatives_after(out)
    for i, s in enumerate(out, 1):
        s.rank = i
    summary = AdviceSummary(gradient_s=total, profiled_s=profiled, replayed=bool(plain), factor=factor,
                            factor_basis=basis, profiles=len(profiles), signatures=len(costs), derived=len(derived),
                            decomposed=sum(c.decomposed for c in derived.values()))
    return out, summary


def _chosen(c: Cost, pick, total, credited, prog, hand, programs, n_profiles, written=None) -> list[str]:
    opt = pick.option
    if programs:  # judged program by program (_library_per_program)
        top, _, command = max(programs)
        reasons = [f"saves {duration(pick.gain.point)} per run of all {n_profiles} programs ({pick.gain.point / total:.0%} "
                   f"of their gradient time); worth its burden in {len(programs)} of them on its own, up to {top:.0%} "
                   f"of one's gradient time ({command}): a library rule serves them all"]
    else:
        reasons = explain.verdict(opt, pick.gain, total, credited)
    reasons += explain.rule_line(c, opt, _rule_s(c, opt), hand, written, total)
    reasons += explain.program_line(c, opt, prog)
    if pick.gain.point >= total * (1 - 1e-9):
        # (replays timed at other moments than the program's can add up to more: docs/advisor.md)
        reasons.append("its estimate came to the whole gradient time or more: counted as the whole")
    return reasons


def _kept(c, name, opts, user: UserChoice, unsure, tier, total, th) -> list[str]:
    if name in user.covered:
        return [explain.covered(user.covered[name])]
    if name in user.passed:
        return [explain.passed(user.passed[name], total, th.nest_share, user.close.get(name))]
    if unsure is not None:
        return [explain.uncertain(unsure.option, unsure.gain, total)]
    if not opts:
        return ["kept derived: no rule is open to it"]
    credited = user.inside.get(name, 0.0) if tier == USER else 0.0
    top = max(opts, key=lambda o: o.per_call(c).point)
    gain = top.per_call(c).times(c.calls).less(credited)
    if gain.point <= 0:
        return explain.no_saving(c, opts, credited)
    return [explain.below_burden(top, gain, total, credited)]


def _rule_s(c: Cost, opt) -> float:
    """What the rule is expected to cost per call, in the derived column's seconds: the derived
    cost less what it saves (the table's "rule" and the number in the reasons)."""
    saved = opt.per_call(c).point / (c.scale or 1.0)
    return max(c.derived_s - saved, 0.0)


def _under(tree, costs: dict) -> dict:
    """Signature -> the user functions called under it (transitively, in any of its places in the
    merged tree), at most MAX_CALLEES of them, as function names."""
    out: dict = {}
    below: dict = {}  # id(node) -> frozenset of function names under it
    for node in reversed(walk(tree)):
        names: set = set()
        for child in node.children.values():
            cc = costs.get(child.signature)
            if cc is not None and cc.kind != "numpy" and cc.served_by == "derived":
                names.add(child.signature.function)
            if len(names) < MAX_CALLEES:
                names |= below.get(id(child), frozenset())
        names.discard(node.signature.function)
        if len(names) > MAX_CALLEES:
            names = set(sorted(names)[:MAX_CALLEES])
        below[id(node)] = frozenset(names)
        acc = out.setdefault(node.signature, set())
        if len(acc) < MAX_CALLEES:
            acc |= names
    return out


def _function_lines(costs: dict) -> dict:
    """User function name -> its source lines (the most any of its signatures recorded)."""
    lines: dict = {}
    for c in costs.values():
        if c.kind != "numpy" and c.lines:
            lines[c.function] = max(lines.get(c.function, 0), c.lines)
    return lines


def _burden_lines(c: Cost, callees, lines: dict) -> tuple[int, int]:
    """(source lines a hand-written rule for ``c`` re-implements: its own and its callees', the
    number of those callees); ``lines``: _function_lines."""
    return (c.lines or 0) + sum(lines.get(f, 0) for f in callees), len(callees)


def _alternatives(tree, derived, opts, user: UserChoice, total) -> dict:
    """Signature -> (the chosen caller, its own certain pick) for the user functions inside a
    chosen rule that save more per line of burden than it does: lighter rules beside the big one."""
    out: dict = {}
    for name, caller in user.covered.items():
        c = derived.get(name)
        target = user.chosen.get(caller)
        if c is None or c.kind == "numpy" or target is None:
            continue
        mine, _ = best(c, opts.get(name, []), c.calls, user.inside.get(name, 0.0), total)
        if mine is None or mine.option.action != HAND_WRITE or target.option.action != HAND_WRITE:
            continue
        if mine.gain.point / max(mine.option.burden_s, 1e-12) > target.gain.point / max(target.option.burden_s, 1e-12):
            out[name] = (caller, mine)
    return out


def _lighter(name, alternatives: dict) -> list:
    return [(alt, pick) for alt, (caller, pick) in alternatives.items() if caller == name]


def _alternatives_after(out: list) -> list:
    """Each alternative right after the suggestion it stands in for."""
    alts = {}
    rest = []
    for s in out:
        if s.alternative_to is not None:
            alts.setdefault(s.alternative_to, []).append(s)
        else:
            rest.append(s)
    ordered = []
    for s in rest:
        ordered.append(s)
        ordered += alts.pop(str(s.signature), [])
    for left in alts.values():
        ordered += left
    return ordered


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


def _suggestion(c: Cost, action: str, pick, total: float, reasons: list, tier: str, uncertain: bool = False,
                alternative_to: str | None = None, written: float | None = None,
                close_call: str | None = None) -> Suggestion:
    opt = None if pick is None else pick.option
    taken = action != KEEP_DERIVED
    gain = pick.gain if pick is not None and taken else Span.exact(0.0)
    synth = None
    if c.synth_gap_s is not None:
        synth = Span(c.synth_gap_s, c.synth_gap_lo_s, c.synth_gap_hi_s).times(c.program_scale)
    if action == HAND_WRITE:
        reasons = reasons + explain.synthesis_lines(c, synth, gain.point)
    return Suggestion(
        rank=0, signature=c.signature, action=action, calls=c.calls,
        derived_s=c.derived_s, primal_s=c.primal_s,
        rule_s=None if opt is None or not taken else _rule_s(c, opt),
        rule_measured=bool(opt and opt.measured and taken),
        saving_s=gain.point, share=gain.point / total if total else 0.0,
        allocs_derived_bytes=int(c.alloc_per_call),
        allocs_rule_bytes=None if opt is None or not taken else (opt.peak_bytes if opt.action == IMPORT else c.direct_bytes),
        reasons=reasons, rule=None if opt is None or not taken else opt.rule, tier=tier,
        decomposition=None if not c.decomposed else {
            "primal_s": c.primal_s, "pullback_s": c.pullback_s, "vector_pullback_s": c.vector_pullback_s,
            "work_s": c.work_s, "lean_pullback_s": c.lean_s,
            "machinery_s": c.machinery_s, "nodes": c.nodes, "operations": c.operations, "chain": c.chain,
            "lines": c.lines, "lean_forward_s": c.hand_forward_s},
        saving_low_s=gain.low, saving_high_s=gain.high,
        burden_share=None if opt is None else opt.burden_s / total if total else None,
        uncertain=uncertain, alternative_to=alternative_to,
        lines=None if opt is None or opt.action != HAND_WRITE else opt.lines,
        callees=None if opt is None or opt.action != HAND_WRITE else opt.callees,
        recurrence=c.recurrent if c.chain is not None else None,
        saving_written_s=written, close_call=close_call,
        synthesized_saving_s=None if synth is None else synth.point,
        synthesized_saving_low_s=None if synth is None else synth.low,
        synthesized_saving_high_s=None if synth is None else synth.high,
        synthesis=c.synthesis,
    )
