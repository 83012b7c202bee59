"""What a derived signature could be served by instead: a library rule imported, or a rule
written by hand. What each costs per call, what it saves with what certainty, its burden, and
why the ways not open are closed. Numbers only: the sentences are explain.py's.

For a signature with derived cost D per call, primal P, and calls c (docs/advisor.md):

* **import**: a library rule that agreed with the derived gradient on the samples, measured
  cost R: it saves c * (D - R), or what its what-if saved in the program;
* **hand-write**: the estimated cost H (:class:`HandEstimate`: serving the primal, plus the
  pullback work that scales with data), saving c * (D - H), or the program's what-if with a
  minimal rule less the pullback work a real rule adds.

No rule saves more per call than D - P (it still computes the primal), and no estimate of a rule
costs more than the derived work it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import Thresholds
from .costs import Cost

HAND_WRITE, IMPORT = "hand-write", "import"

# The primal's per-operation cost counts as vectorisable once it is over this share of the
# hand-written estimate (below it, the credit is noise and the reason does not mention it).
VECTORISED_SHARE = 0.05
# A closed form's data work counts as leaner than the generic VJPs' when it is under this share.
LEAN_SHARE = 0.99
# A replay that took this share or less of the run's own time per call may overstate the cost.
REPLAY_OVERSTATES = 0.5
# An import's saving in the program, as a share of the program's gradient time, that outweighs
# its being slower than the derived rule when the two are timed alone (one pair timed alone is a
# noisy sample; 10% of the program's gradient time is not noise).
CLEAR_SAVING = 0.10


@dataclass(frozen=True)
class Span:
    """Seconds as a point estimate and the interval the measurements allow (equal to the point
    when nothing was repeated to bound it)."""

    point: float
    low: float
    high: float

    @classmethod
    def exact(cls, v: float) -> Span:
        return cls(v, v, v)

    def map(self, f) -> Span:
        """The span of ``f`` (an increasing function) of this one."""
        return Span(f(self.point), f(self.low), f(self.high))

    def times(self, k: float) -> Span:
        return Span(self.point * k, self.low * k, self.high * k)

    def less(self, x: float) -> Span:
        return Span(self.point - x, self.low - x, self.high - x)

    def capped(self, cap: float) -> Span:
        return Span(min(self.point, cap), min(self.low, cap), min(self.high, cap))

    def __add__(self, other: Span) -> Span:
        return Span(self.point + other.point, self.low + other.low, self.high + other.high)


ZERO = Span(0.0, 0.0, 0.0)


@dataclass
class HandEstimate:
    """A hand-written rule's estimated cost per call and what it is made of."""

    cost_s: float | None
    floor_s: float | None = None  # serving the primal: a minimal rule, or the primal + one rule call
    floor_measured: bool = False  # the floor was measured with a minimal rule
    zeros_s: float = 0.0  # of the floor: the minimal rule's pullback making zero gradients
    pullback_s: float = 0.0  # the pullback work a closed form does
    vectorised_s: float = 0.0  # what a lean forward saves on the primal as written (Cost.forward_saving_s)
    basis: str | None = None  # without a decomposition: how the factor over the primal was found
    capped: bool = False  # the estimate came above the derived cost and was held to it


@dataclass
class Option:
    """One way to serve a signature with a rule."""

    action: str
    cost_s: float  # per call, in replayed seconds: measured (import) or estimated (hand-write)
    measured: bool
    rule: str | None  # the library rule's name (import)
    burden_s: float  # per run, in the advisor's seconds
    saves: Span | None = None  # per call in the program (Cost.in_program); else (D - cost) * scale
    peak_bytes: int | None = None  # an import's measured peak memory per call
    lines: int = 0  # a hand-written rule's size: the source lines under it (burden)
    callees: int = 0  # and the user functions it must re-derive

    def per_call(self, c: Cost) -> Span:
        """What the rule saves per call of ``c``, in the advisor's seconds: never more than the
        derived cost less the forward the rule still computes (an import: the primal it calls; a
        hand-written rule: the lean forward, ``Cost.hand_forward_s``)."""
        s = self.saves if self.saves is not None else Span.exact((c.derived_s - self.cost_s) * c.scale)
        least = c.hand_forward_s if self.action == HAND_WRITE else c.primal_s
        if least is not None and c.derived_s is not None:
            s = s.capped(max(c.derived_s - least, 0.0) * c.scale)
        return s


@dataclass
class Closed:
    """A way that is not open, and why: ``kind`` names the reason, ``data`` its numbers."""

    kind: str
    data: dict = field(default_factory=dict)


@dataclass
class InProgram:
    """Per call of a signature, in the program's gradients (Cost.in_program): its derived cost,
    and what an import and a hand-written rule save there (None: not measured)."""

    derived_s: float
    import_saves: Span | None
    hand_saves: Span | None
    written_saves: Span | None = None  # what a hand-written rule saves there with the forward as written


def in_program(c: Cost) -> InProgram | None:
    """What the program's what-ifs say per call of ``c``; None unless they were measured. The
    hand-written rule is the measured minimal rule (its primal, zero gradients) plus the pullback
    work that scales with data, less the forward's vectorisable share (docs/advisor.md)."""
    if not c.in_program or not c.calls:
        return None
    k = c.program_scale / c.calls
    derived = c.program_s * k
    imp = hand = None
    if c.import_gap_s is not None:
        imp = Span(c.import_gap_s, c.import_gap_lo_s, c.import_gap_hi_s).times(k)
    elif c.program_import_s is not None:
        imp = Span.exact((c.program_s - c.program_import_s) * k)
    written = None
    if c.program_floor_s is not None and c.decomposed:
        pullback = (c.hand_pullback - c.zeros_s) * c.tempo
        extra = pullback - c.forward_saving_s * c.tempo  # less what a lean forward saves on the primal
        floor = (Span(c.floor_gap_s, c.floor_gap_lo_s, c.floor_gap_hi_s).times(k) if c.floor_gap_s is not None
                 else Span.exact((c.program_s - c.program_floor_s) * k))
        # a rule costs at least nothing: what it leaves is max(derived - floor saving + extra, 0)
        hand = floor.map(lambda f: derived - max(derived - f + extra, 0.0))
        written = floor.map(lambda f: derived - max(derived - f + pullback, 0.0))
    return InProgram(derived, imp, hand, written)


def as_written(c: Cost, hand: HandEstimate, prog: InProgram | None) -> float:
    """What a hand-written rule saves per call (the advisor's seconds) with its forward as the
    program wrote it (the exported skeleton's): the estimate without the lean forward's credit,
    held below the derived cost less the primal. The other end of the range a hand-write's
    saving spans, which depends on how its forward is written."""
    cap = max(c.derived_s - c.primal_s, 0.0) * c.scale if c.primal_s is not None else float("inf")
    if prog is not None and prog.written_saves is not None:
        return min(prog.written_saves.point, cap)
    if hand.cost_s is None:
        return 0.0
    return min((c.derived_s - min(hand.cost_s + hand.vectorised_s, c.derived_s)) * c.scale, cap)


def hand_estimate(c: Cost, factor: float, basis: str) -> HandEstimate:
    """A hand-written rule's estimated cost per call (replayed seconds), never above the derived."""
    P = c.primal_s
    if c.decomposed:
        floor = max(c.direct_floor_s - c.zeros_s, P) if c.direct_floor_s else P + c.rule_call_s
        lean = c.forward_saving_s  # the Python around the primal's operations, which a rule's forward leaves out
        est = HandEstimate(max(floor + c.hand_pullback - lean, 0.0), floor, bool(c.direct_floor_s), c.zeros_s,
                           c.hand_pullback, lean)
    elif P and c.direct_floor_s:
        # a profile without the decomposition: the floor of serving any rule plus the rest of its
        # work scaled from the primal, with the factor calibrated on the measured imports
        est = HandEstimate(c.direct_floor_s + max(factor - 1.0, 0.0) * P, c.direct_floor_s, True, basis=basis)
    else:
        est = HandEstimate(factor * P if P else None, basis=basis)
    if est.cost_s is not None and c.derived_s is not None and est.cost_s > c.derived_s:
        est.cost_s, est.capped = c.derived_s, True  # a rule for this work never costs more than all of it
    return est


def options(c: Cost, hand: HandEstimate, prog: InProgram | None, th: Thresholds, total: float,
            burden_lines: int, callees: int) -> tuple[list[Option], list[Closed]]:
    """The actions open to one derived signature, and the ways that are closed. ``burden_lines``
    and ``callees``: the user code a hand-written rule for it must re-implement (tiers.py)."""
    opts: list[Option] = []
    closed: list[Closed] = []
    D = c.derived_s
    if c.output not in (None, "value", "tuple"):
        return opts, [Closed("output", {"output": c.output})]
    best = c.best_import()
    for bad in c.disagreeing_imports():
        closed.append(Closed("disagrees", {"rule": bad.rule, "error": bad.error or ""}))
    hand_left = None if prog is None or prog.hand_saves is None else D - prog.hand_saves.point / (c.scale or 1.0)
    if best is not None:
        R = best.rule_s
        peak = best.rule_peak_bytes
        imp_left = None if prog is None or prog.import_saves is None else D - prog.import_saves.point / (c.scale or 1.0)
        floor = max(hand_left if hand_left is not None else 0.0, c.rule_call_s or 0.0)
        if isinstance(peak, int) and c.direct_bytes and peak > th.alloc_tolerance * c.direct_bytes:
            closed.append(Closed("import-allocates", {"rule": best.rule, "peak": peak, "direct": c.direct_bytes}))
        elif imp_left is not None and hand_left is not None and imp_left > th.import_tolerance * floor:
            closed.append(Closed("import-costlier", {"rule": best.rule, "import_s": imp_left, "hand_s": floor}))
        elif R > D and not (prog is not None and prog.import_saves is not None
                            and prog.import_saves.point >= CLEAR_SAVING * prog.derived_s):
            # the program's what-if can come out even (its gradient does other work; the allocator's
            # state moves the cost of big temporaries): an import slower than the derived rule alone
            # is no saving an expert would sign, unless the program clearly gains from it
            closed.append(Closed("import-slower", {"rule": best.rule, "import_s": R, "derived_s": D}))
        elif (prog is None or prog.import_saves is None) and hand.cost_s is not None \
                and R > th.import_tolerance * hand.cost_s:
            closed.append(Closed("import-vs-estimate", {"rule": best.rule, "import_s": R, "hand_s": hand.cost_s}))
        else:
            opts.append(Option(IMPORT, R, True, best.rule, th.import_burden * total,
                               None if prog is None else prog.import_saves, peak))
    elif not c.imports:
        closed.append(Closed("no-library-rule" if c.kind == "numpy" else "user-function"))
    if hand.cost_s is not None:
        scale = 1.0 + size(c, burden_lines) / th.burden_size
        opts.append(Option(HAND_WRITE, hand.cost_s, False, None, th.handwrite_burden * scale * total,
                           None if prog is None else prog.hand_saves, lines=burden_lines, callees=callees))
    elif not c.measured and c.replay_error:
        closed.append(Closed("replay-failed", {"error": c.replay_error}))
    elif not c.measured:
        closed.append(Closed("not-replayed"))
    return opts, closed


def size(c: Cost, lines: int) -> float:
    """How much there is to write in a hand-written rule for ``c``: its distinct operations, its
    arguments and a fifth of the source lines it must re-implement (its own and its callees')."""
    return (c.operations or 1) + c.arguments + lines / 5
