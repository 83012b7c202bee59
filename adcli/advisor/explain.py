"""The reasons printed under each suggestion: the verdict and the two numbers that decide it
first, then one short line per part of the evidence (docs/advisor.md § Reasons).

Only sentences live here: every number comes from the decision code (options.py, tiers.py)."""

from __future__ import annotations

from ..units import duration, human_bytes
from .costs import Cost
from .options import HAND_WRITE, REPLAY_OVERSTATES, VECTORISED_SHARE, Closed, InProgram, Option, Span


def share(x: float, total: float) -> str:
    return f"{x / total:.0%}" if total else "?"


def span_share(s: Span, total: float) -> str:
    """"38-44%" (or "38%" when the interval is one point at this precision)."""
    lo, hi = share(s.low, total), share(s.high, total)
    if lo == hi:
        return lo
    return f"{lo[:-1]}-{hi}" if not lo.startswith("-") else f"{lo} to {hi}"


def span_time(s: Span) -> str:
    """"15.8-17.6 ms" (one unit when both ends have it), "980 µs-1.2 ms" otherwise."""
    lo, hi = duration(s.low), duration(s.high)
    if lo == hi:
        return lo
    (a, unit_a), (b, unit_b) = lo.split(), hi.split()
    return f"{a}-{b} {unit_a}" if unit_a == unit_b and "-" not in a + b else f"{lo} to {hi}"


def burden(opt: Option, total: float) -> str:
    """"burden 17% (9 lines + 2 callees)" or "burden 2% (an import)"."""
    if opt.action != HAND_WRITE:
        return f"burden {share(opt.burden_s, total)} (an import)"
    what = f"{opt.lines} line{'s' * (opt.lines != 1)}"
    if opt.callees:
        what += f" + {opt.callees} callee{'s' * (opt.callees != 1)}"
    return f"burden {share(opt.burden_s, total)} ({what})"


def verdict(opt: Option, gain: Span, total: float, credited: float = 0.0) -> list[str]:
    """The headline (and, under it, what the library rules inside already save, when they do)."""
    head = f"saves {span_share(gain, total)} of the gradient time ({span_time(gain)} per run); {burden(opt, total)}"
    return [head] + ([f"that is after the {duration(credited)} the library rules inside it save"] if credited > 0 else [])


def parts(c: Cost) -> str | None:
    """"derived 454 µs per call = primal 60 µs + pullbacks 300 µs (140 nodes) + machinery 94 µs":
    parts measured apart are scaled to add up to the whole."""
    if not c.decomposed:
        return None
    D, P, B = c.derived_s, c.primal_s, c.pullback_s
    k = D / (P + B) if P + B > D > 0 else 1.0
    return (f"derived {duration(D)} per call = primal {duration(P * k)} + pullbacks {duration(B * k)} "
            f"({c.nodes} nodes) + machinery {duration(max(D - (P + B) * k, 0.0))}")


def rule_line(c: Cost, opt: Option, rule_s: float, hand, written: float | None = None,
              total: float = 0.0) -> list[str]:
    """What the rule costs per call (the table's number) and what it is made of; for a
    hand-written rule whose lean forward leaves out much of the primal, what it saves with the
    forward as written (the range no estimate narrows: it depends on how the rule is written)."""
    if opt.action != HAND_WRITE:
        return [f"rule {duration(rule_s)} per call, measured: {opt.rule} agrees with the derived gradient"]
    out = []
    lean = c.hand_forward_s
    if lean is not None and rule_s <= lean * (1 + 1e-9):
        out.append(f"rule {duration(rule_s)} per call, estimated: its forward's operations, the least a rule "
                   "for it costs")
    elif c.decomposed:
        work = hand.pullback_s
        out.append(f"rule {duration(rule_s)} per call, estimated = {duration(max(rule_s - work, 0.0))} forward "
                   f"and call + {duration(min(work, rule_s))} of pullback work")
    else:
        out.append(f"rule {duration(rule_s)} per call, estimated ({hand.basis})")
    if c.recurrent:
        out.append(f"a recurrence (each step needs the last; critical path {c.chain} of {c.nodes} nodes): "
                   "a call per step")
    if c.decomposed and hand.vectorised_s > VECTORISED_SHARE * max(rule_s, 1e-12):
        out.append(f"a lean forward: {duration(lean)} against the primal's {duration(c.primal_s)} as written "
                   "(its operations alone)")
        if written is not None and total:
            out.append(f"with the forward as written (the exported skeleton's): saves {share(written, total)}")
    if hand.capped:
        out.append("the estimate came above the derived cost it replaces: held to it")
    return out


def program_line(c: Cost, opt: Option, prog: InProgram | None) -> list[str]:
    """The program's what-if, per run, as measured."""
    if prog is None:
        return []
    run = c.calls
    if opt.action == HAND_WRITE and prog.hand_saves is not None and c.program_floor_s is not None:
        out = [f"in the program: {duration(prog.derived_s * run)} per run, "
               f"{duration(c.program_floor_s * c.program_scale)} with a minimal rule for it "
               f"({duration(c.zeros_s * run)} making zeros)"]
        if abs(c.tempo - 1.0) > 0.1:
            out.append(f"(its pullback work counted at x{c.tempo:.2f} its replay's pace, as the machine ran then)")
        return out
    if opt.action != HAND_WRITE and prog.import_saves is not None:
        return [f"in the program: {duration((prog.derived_s - prog.import_saves.point) * run)} per run with it, "
                f"{duration(prog.derived_s * run)} derived (timed in turn)"]
    return []


def synthesis_lines(c: Cost, synth, estimate: float) -> list[str]:
    """What the rule synthesized from the function's source did in the program (measured), and
    how much further a rule optimised by hand could go (the estimate): or why none was made."""
    if c.synthesis is None:
        return []
    if c.synthesis != "verified":
        return [c.synthesis if len(c.synthesis) <= 96 else c.synthesis[:93] + "..."]
    if synth is None:
        return ["a synthesized rule passed its checks (export --script writes it); not timed in the program"]
    if synth.point <= 0:
        spread = f" (90%: {duration(max(-synth.high, 0.0))} to {duration(-synth.low)})" if synth.high > synth.low else ""
        return [f"synthesized rule (export --script): {duration(-synth.point)} per run slower, measured{spread}"]
    spread = f" (90%: {duration(synth.low)} to {duration(synth.high)})" if synth.high > synth.low else ""
    out = [f"synthesized rule (export --script): saves {duration(synth.point)} per run, measured{spread}"]
    if estimate > synth.point:
        out.append(f"a rule optimised by hand: {duration(estimate - synth.point)} more per run (estimated)")
    return out


def below_callees(c: Cost) -> str | None:
    if c.below_callees_s is None:
        return None
    return (f"its replay measured {duration(c.below_callees_s)} per call, less than the functions it calls: "
            f"counted as theirs, {duration(c.derived_s)}")


def replay_warning(c: Cost) -> str | None:
    if not c.in_program and c.measured and c.live_s and c.derived_s and c.live_s < REPLAY_OVERSTATES * c.derived_s:
        return (f"WARNING: its replay took {duration(c.derived_s)} per call, {c.derived_s / c.live_s:.1f}x its "
                f"{duration(c.live_s)} in the run: it may overstate its cost")
    return None


def closed(note: Closed, th) -> str:
    d = note.data
    kind = note.kind
    if kind == "output":
        what = {"None": "None", "object": "an object"}.get(d["output"], f"a {d['output']}")
        return f"no rule can serve it: it returns {what} (a function it calls, or its caller, can have one)"
    if kind == "disagrees":
        return f"WARNING: {d['rule']} disagrees with the derived gradient on the samples: not suggested ({d['error']})"
    if kind == "import-allocates":
        return (f"not the best way: it allocates {human_bytes(d['peak'])} at peak per call, over "
                f"{th.alloc_tolerance:g}x the {human_bytes(d['direct'])} of the same gradient by a minimal rule")
    if kind == "import-costlier":
        return (f"importing is not the best way: {duration(d['import_s'])} per call in the program, "
                f"over {th.import_tolerance:g}x a rule's {duration(d['hand_s'])}")
    if kind == "import-slower":
        return (f"importing is not the best way: slower than the derived rule timed alone "
                f"({duration(d['import_s'])} against {duration(d['derived_s'])})")
    if kind == "import-vs-estimate":
        return (f"importing is not the best way: {duration(d['import_s'])} per call, over "
                f"{th.import_tolerance:g}x a direct rule's estimated {duration(d['hand_s'])}")
    if kind == "no-library-rule":
        return "no library rule exists for this callable"
    if kind == "user-function":
        return "a user function: no library rule can exist"
    if kind == "replay-failed":
        error = d["error"] if len(d["error"]) <= 50 else d["error"][:49] + "…"
        return f"its replay measured nothing ({error}): no estimate"  # (under MAX_REASON characters)
    if kind == "not-replayed":
        return "not replayed (outside the signatures covering most of the time): no primal cost, no estimate"
    raise AssertionError(f"unknown closed option {kind!r}")


def uncertain(opt: Option, gain: Span, total: float) -> str:
    return f"uncertain: {opt.action} would save {span_share(gain, total)}, within noise of its {burden(opt, total)}"


def below_burden(opt: Option, gain: Span, total: float, credited: float) -> str:
    after = f" after the {duration(credited)} the library rules inside it save" if credited > 0 else ""
    return f"{opt.action} would save {span_share(gain, total)}{after}, below its {burden(opt, total)}"


def no_saving(c: Cost, opts: list, credited: float) -> list[str]:
    """The verdict, then what the library rules inside already save, then each way's effect: a
    line each (one sentence of them all came to 141 characters)."""
    def effect(o) -> str:
        d = o.per_call(c).point
        if d == 0:
            return f"{o.action} saves nothing per call"
        return f"{o.action} {'saves' if d > 0 else 'costs'} {duration(abs(d))}{'' if d > 0 else ' more'} per call"
    out = [f"no rule saves time against the derived {duration(c.derived_s)} per call"]
    if credited > 0:
        out.append(f"that is after the {duration(credited)} per run the library rules inside it save")
    return out + [effect(o) for o in opts]


def covered(caller) -> str:
    return f"the rule suggested for its caller covers it ({caller})"


def passed(pick, total: float, nest_share: float, close: float | None = None) -> str:
    if close is not None:
        return (f"its own rule would save {share(pick.gain.point, total)}, the rules inside it {int(close * 100)}% of that: "
                "a close call, the smaller chosen")
    return (f"its own rule would save {share(pick.gain.point, total)}, the rules inside it {nest_share:.0%}+ of that: "
            "smaller rules are the lighter burden")


def close_call(caller, pick, total: float) -> str:
    return f"a close call against its caller's rule, which would save {share(pick.gain.point, total)}: {caller}"


def alternative(name, pick, total: float) -> str:
    return (f"lighter alternative: {pick.option.action} {name}, which saves {span_share(pick.gain, total)} "
            f"with {burden(pick.option, total)}")


def alternative_to(caller) -> str:
    return f"an alternative to the rule suggested for its caller ({caller}): one or the other, not both"
