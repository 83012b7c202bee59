"""Per-signature costs from one or several profiles (aggregated by signature)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..data.model import Profile
from ..data.records import ImportOutcome, ImportTrial, recurrent
from ..engine.signature import Signature


@dataclass
class Cost:
    """What the profiles say about one signature. Times are seconds; ``derived_s`` and
    ``primal_s`` are per call, as in a Replay: replay medians when ``measured``, else the
    profiled run's own (inflated) timing."""

    signature: Signature
    kind: str
    served_by: str
    calls: int = 0
    gradient_s: float = 0.0  # inclusive forward + reverse time in the runs, summed
    derived_s: float | None = None  # per call
    primal_s: float | None = None  # per call
    measured: bool = False
    alloc_bytes: int = 0  # inclusive, forward + reverse, summed over calls
    imports: list[ImportTrial] = field(default_factory=list)  # library rules tried in replays
    direct_bytes: int | None = None  # what a direct rule must allocate (output + gradients), per call
    direct_floor_s: float | None = None  # a minimal direct rule's time per call: the engine's floor
    derived_peak_bytes: int | None = None
    replay_error: str | None = None  # why a replay measured nothing (the first profile's reason)
    # the decomposition of derived_s (profiler.decompose), per call; None without one
    pullback_s: float | None = None
    vector_pullback_s: float | None = None
    rule_call_s: float | None = None
    work_s: float | None = None  # the pullbacks' NumPy work alone (profiler.decompose)
    lean_pullback_s: float | None = None  # the part of vector_pullback_s a closed-form pullback needs
    closed_fixed_s: float | None = None  # the per-call cost a closed-form pullback pays besides that
    lean_forward_s: float | None = None  # the recorded operations alone, re-run (profiler.decompose)
    floor_pullback_s: float | None = None  # a minimal rule's pullback alone: a share of its floors
    nodes: int | None = None
    operations: int | None = None
    chain: int | None = None  # the critical path through its tape, in nodes (profiler.decompose)
    lines: int | None = None
    output: str | None = None  # what its calls returned (data.schema.OUTPUTS); None: not recorded
    replayed_units: bool = False  # the advisor weighs replayed seconds (see scale); set for all at once
    # in the program (Replay.program_*), seconds per run summed over the profiles; None unless
    # every profile that replayed it measured them
    program_s: float | None = None
    program_import_s: float | None = None
    program_floor_s: float | None = None
    program_alone_s: float | None = None  # per call, its own gradient in those rounds (calls-weighted mean)
    # what the import / a minimal rule saves per run there: median and 90% interval of the
    # paired rounds (Replay.*_gap_*), summed over the profiles like program_s
    import_gap_s: float | None = None
    import_gap_lo_s: float | None = None
    import_gap_hi_s: float | None = None
    floor_gap_s: float | None = None
    floor_gap_lo_s: float | None = None
    floor_gap_hi_s: float | None = None
    program_synth_s: float | None = None  # with the rule synthesized from its source (a user function's)
    synth_gap_s: float | None = None
    synth_gap_lo_s: float | None = None
    synth_gap_hi_s: float | None = None
    synthesis: str | None = None  # "verified", or why no rule was synthesized (Replay.synthesis)
    in_program: bool = False  # the advisor uses the program_* measurements (set with replayed_units)
    # program seconds -> the advisor's: the replayed time of the roots that call it over program_s
    # (measured at another moment; a share of program_s is what the program measurement says)
    program_scale: float = 1.0
    below_callees_s: float | None = None  # its replayed derived cost per call, when that was below its callees'
    _weight: float = 0.0

    @property
    def decomposed(self) -> bool:
        return self.measured and self.pullback_s is not None and self.vector_pullback_s is not None

    @property
    def machinery_s(self) -> float | None:
        """The engine's share of the derived cost: D - P - pullbacks (never negative)."""
        if not self.decomposed:
            return None
        return max(self.derived_s - self.primal_s - self.pullback_s, 0.0)

    # --- a hand-written rule's estimate (docs/advisor.md § What is estimated) ---
    @property
    def repeated(self) -> float:
        """The share of a call's operations that repeat an operation already recorded (1 - distinct
        operations / tape nodes): what vectorising runs of scalar operations can remove."""
        if not self.nodes or not self.operations:
            return 0.0
        return min(max(1.0 - self.operations / self.nodes, 0.0), 1.0)

    @property
    def recurrent(self) -> bool:
        """Whether its operations form a recurrence (steps each needing the last: a time loop, a
        stack of layers) rather than a map or a reduction (adcli.data.records.recurrent); False
        when the profile did not record its critical path."""
        return recurrent(self.nodes, self.operations, self.chain)

    @property
    def work(self) -> float:
        """The derived pullbacks' NumPy work (their VJP expressions alone, without the engine's
        accumulation), or their whole time in profiles from before it was measured."""
        return self.work_s if self.work_s is not None else self.pullback_s

    @property
    def lean_s(self) -> float:
        """The derived pullbacks' data work a closed-form pullback still does: elementwise and
        memory-bound reductions' at most their forward's (profiler.decompose); all of it in
        profiles from before that was measured."""
        v = self.vector_pullback_s
        return v if self.lean_pullback_s is None else min(self.lean_pullback_s, v)

    @property
    def hand_pullback(self) -> float:
        """A hand-written pullback's work: the derived pullbacks' NumPy work on data, as much of
        it as a closed form needs, and NumPy's per-call cost paid once per distinct operation
        rather than once per tape node (``closed_fixed_s``: at most one NumPy call per
        differentiated argument; in profiles from before it, the VJPs' own per-call costs)."""
        if self.closed_fixed_s is not None:
            return self.lean_s + self.closed_fixed_s
        work = max(self.work, self.vector_pullback_s)
        return self.lean_s + (work - self.vector_pullback_s) * (1.0 - self.repeated)

    @property
    def zeros_s(self) -> float:
        """What a minimal rule's pullback spends making its zero gradients: measured in the
        floors (``direct_floor_s``, ``program_floor_s``), replaced in a real rule by the work of
        ``hand_pullback``, which makes the gradients itself."""
        return self.floor_pullback_s or 0.0

    @property
    def scalar_primal(self) -> float:
        """The part of the primal a rule's forward pass can vectorise: the primal's per-operation
        share (that of the pullbacks' NumPy work, as a proxy), for the operations that repeat."""
        work = self.work if self.decomposed else None
        if not work or not self.primal_s or self.recurrent:  # a recurrence's steps stay one call each
            return 0.0
        return self.primal_s * min(max(1.0 - self.vector_pullback_s / work, 0.0), 1.0) * self.repeated

    @property
    def hand_forward_s(self) -> float | None:
        """What a hand-written rule's forward pass costs per call: the operations its tape
        recorded, each re-run alone on its recorded values (their data work, and NumPy's per-call
        cost once per distinct operation, per node in a recurrence), never more than the primal
        as the program wrote it. The program's primal also pays for the Python around those
        operations (helper calls, SciPy's argument checks, lists built and joined), which an
        expert's forward leaves out: the corpus's rules for rnn, lstm and hmm_em run whole
        gradients in less than the primal (docs/advisor.md § The corpus). In profiles from before
        it was measured: the primal less its vectorisable share, as before."""
        if self.primal_s is None:
            return None
        if not self.decomposed or self.lean_forward_s is None:
            return self.primal_s - self.scalar_primal
        return min(self.primal_s, self.lean_forward_s)

    @property
    def forward_saving_s(self) -> float:
        """What a lean forward saves on the primal as written (``primal_s - hand_forward_s``)."""
        lean = self.hand_forward_s
        return 0.0 if lean is None else max(self.primal_s - lean, 0.0)

    @property
    def live_s(self) -> float | None:
        """Inclusive forward + reverse seconds per call in the profiled runs (with the profiler's
        own overhead in it)."""
        return self.gradient_s / self.calls if self.calls else None

    @property
    def scale(self) -> float:
        """Replayed seconds per call -> the advisor's seconds (docs/advisor.md § What is measured):
        with the program measured, what its calls cost there over what one cost alone; else
        1 when replayed seconds are the unit (``replayed_units``); else the run's live time per call over
        the replay's (the run's seconds, profiler included)."""
        if self.in_program and self.calls and self.derived_s:  # its calls cost this much in the program
            return self.program_s * self.program_scale / (self.calls * self.derived_s)
        if self.replayed_units:
            return 1.0
        if not self.measured or not self.live_s or not self.derived_s:
            return 1.0
        return self.live_s / self.derived_s

    @property
    def tempo(self) -> float:
        """Replayed seconds (``derived_s`` and its decomposition) -> the advisor's seconds at the
        moment the program was measured: the signature's own gradient timed in the same rounds as
        the program's what-ifs over its replay (a shared machine's speed changes between the two);
        1 without that measurement."""
        if not self.in_program or not self.program_alone_s or not self.derived_s:
            return 1.0
        return self.program_alone_s * self.program_scale / self.derived_s

    @property
    def arguments(self) -> int:
        return len(self.signature.args) + len(self.signature.kwargs)

    @property
    def size(self) -> float:
        """How much there is to write in a hand-written rule for it: its distinct operations,
        its arguments and a fifth of its lines (docs/advisor.md § Burden and granularity)."""
        return (self.operations or 1) + self.arguments + (self.lines or 0) / 5

    @property
    def alloc_per_call(self) -> float:
        return self.alloc_bytes / self.calls if self.calls else 0.0

    @property
    def function(self) -> str:
        return self.signature.function

    def best_import(self) -> ImportTrial | None:
        """The fastest importable rule that agreed with the derived gradient, or None."""
        ok = [i for i in self.imports if i.outcome is ImportOutcome.AGREES]
        return min(ok, key=lambda i: i.rule_s) if ok else None

    def disagreeing_imports(self) -> list[ImportTrial]:
        return [i for i in self.imports if i.outcome is ImportOutcome.DISAGREES]


GAPS = ("import_gap_s", "import_gap_lo_s", "import_gap_hi_s", "floor_gap_s", "floor_gap_lo_s", "floor_gap_hi_s",
        "synth_gap_s", "synth_gap_lo_s", "synth_gap_hi_s")


def aggregate(profiles: list[Profile]) -> tuple[dict, float]:
    """Signature -> Cost, and the total gradient time, over all ``profiles``."""
    costs: dict = {}
    total = 0.0
    for p in profiles:
        total += p.totals.gradient_s
        for s in p.signatures:
            c = costs.get(s.signature)
            if c is None:
                c = costs[s.signature] = Cost(s.signature, s.kind, s.served_by)
            c.calls += s.calls
            c.gradient_s += s.gradient_s
            if s.output is not None and c.output in (None, "value", "tuple"):
                c.output = s.output
            if s.lines is not None:
                c.lines = max(c.lines or 0, s.lines)
            c.alloc_bytes += s.allocs.bytes
            r = s.replay
            if r is not None and not r.measured and r.error and c.replay_error is None:
                c.replay_error = r.error
            if r is not None and r.measured:
                # calls-weighted mean of the replayed per-call costs across profiles
                w = max(s.calls, 1)
                parts = (r.pullback_s, r.vector_pullback_s, r.rule_call_s)
                decomposed = None not in parts and (not c.measured or c.decomposed)
                if not decomposed:  # a profile without the decomposition: none for the aggregate
                    c.pullback_s = c.vector_pullback_s = c.rule_call_s = None
                for attr, value in (("derived_s", r.derived_s), ("primal_s", r.primal_s),
                                    *(zip(("pullback_s", "vector_pullback_s", "rule_call_s"), parts) if decomposed else ())):
                    old = (getattr(c, attr) or 0.0) if c.measured else 0.0
                    setattr(c, attr, (old * c._weight + value * w) / (c._weight + w))
                # the pullbacks' NumPy work and the own gradient in the program's rounds: weighted
                # means like the rest, None once a profile lacks them
                for attr in ("work_s", "lean_pullback_s", "closed_fixed_s", "lean_forward_s", "floor_pullback_s",
                             "program_alone_s"):
                    value, old = getattr(r, attr), getattr(c, attr)
                    setattr(c, attr, None if value is None or (c.measured and old is None) else (
                        ((old or 0.0) * c._weight + value * w) / (c._weight + w)))
                if c.synthesis is None or r.synthesis not in (None, "verified"):
                    c.synthesis = r.synthesis  # a failure in any profile is the one said
                for attr in ("program_s", "program_import_s", "program_floor_s", "program_synth_s", *GAPS):
                    value, old = getattr(r, attr), getattr(c, attr)
                    setattr(c, attr, None if value is None or (c.measured and old is None) else (old or 0.0) + value)
                for attr in ("nodes", "operations", "chain", "lines"):
                    value = getattr(r, attr)
                    if value is not None:
                        setattr(c, attr, max(getattr(c, attr) or 0, value))
                c._weight += w
                c.measured = True
                c.imports += r.imports
                if r.direct_bytes is not None:
                    c.direct_bytes = max(c.direct_bytes or 0, r.direct_bytes)
                if r.direct_floor_s is not None:
                    c.direct_floor_s = max(c.direct_floor_s or 0.0, r.direct_floor_s)
                if r.derived_peak_bytes is not None:
                    c.derived_peak_bytes = max(c.derived_peak_bytes or 0, r.derived_peak_bytes)
    for c in costs.values():
        if not c.measured and c.calls:
            c.derived_s = c.gradient_s / c.calls
        if c.decomposed and c.pullback_s > max(c.derived_s - c.primal_s, 0.0) > 0:
            # the pullbacks timed node by node (at another moment, on a busy machine) came to more
            # than the derived cost less the primal: every part of them scaled to fit the whole
            k = (c.derived_s - c.primal_s) / c.pullback_s
            for attr in ("pullback_s", "vector_pullback_s", "work_s", "lean_pullback_s", "closed_fixed_s"):
                if getattr(c, attr) is not None:
                    setattr(c, attr, getattr(c, attr) * k)
    return costs, total


def plain_times(costs: dict, tree: dict) -> tuple[float | None, dict]:
    """The gradient time per run without the profiler: the replayed derived time of the
    functions handed to ``grad`` (the merged tree's roots) times their calls, None unless every
    root was replayed; and signature -> the part of it spent in the roots whose calls reach it
    (empty when the total is None)."""
    total, out = 0.0, {}
    for name, node in tree.children.items():
        c = costs.get(name)
        if c is None or not c.measured or not c.derived_s:
            return None, {}
        t = node.calls * c.derived_s
        total += t
        stack, seen = [node], set()
        while stack:
            n = stack.pop()
            if n.signature not in seen:
                seen.add(n.signature)
                out[n.signature] = out.get(n.signature, 0.0) + t
            stack.extend(n.children.values())
    return (total, out) if total else (None, {})


def calibrate(costs: dict, fallback: float) -> tuple[float, str]:
    """The estimated cost of a hand-written rule as a multiple of its primal: the time-weighted
    ratio of the imported rules measured in these profiles (sum of rule times over sum of
    primal times, so tiny calls dominated by fixed overhead do not dominate), else ``fallback``."""
    rule_s = primal_s = 0.0
    n = 0
    for c in costs.values():
        best = c.best_import()
        # calls under 20 µs are dominated by the engine's fixed per-call cost, which says
        # nothing about how a rule's work scales with its primal: left out of the calibration
        if best is not None and c.primal_s and c.primal_s >= 20e-6:
            rule_s += best.rule_s
            primal_s += c.primal_s
            n += 1
    if n and primal_s > 0:
        factor = max(rule_s / primal_s, 1.0)
        return factor, f"{factor:.1f}x the primal, calibrated on {n} imported rule(s) measured"
    return fallback, f"{fallback:.1f}x the primal, the fallback factor: no import measured"

