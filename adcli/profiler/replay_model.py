"""What a replay measured (part of the profile's typed data, adcli.profiler.model): the import
trials, the per-call costs and their decomposition. Pure data, no measuring."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .fields import Signed


class ImportOutcome(str, enum.Enum):
    """How trying a library rule on a signature's sample ended."""

    AGREES = "agrees"  # imported, verified against finite differences and the derived gradient, timed
    DISAGREES = "disagrees"  # verification found a different gradient: one of the two is wrong
    FAILED = "failed"  # not importable for this call (refused, no example, an error)


@dataclass
class ImportTrial:
    """One library rule tried in a replay."""

    rule: str  # e.g. "autograd numpy.kron"
    outcome: ImportOutcome
    rule_s: float | None = None  # seconds per gradient with the rule imported (AGREES only)
    rule_peak_bytes: int | None = None
    verification: str = ""  # how it was checked
    error: str | None = None  # why it failed or disagreed

    def to_json(self) -> dict:
        return {"rule": self.rule, "outcome": self.outcome.value, "rule_s": self.rule_s,
                "rule_peak_bytes": self.rule_peak_bytes, "verification": self.verification, "error": self.error}


DECOMPOSITION = {"pullback_s": float, "vector_pullback_s": float, "nodes": int, "operations": int, "chain": int,
                 "lines": int,
                 "rule_call_s": float, "work_s": float, "lean_pullback_s": float, "closed_fixed_s": float,
                 "lean_forward_s": float, "floor_pullback_s": float,
                 # in the program (replay.in_program): seconds per run of the gradients that call it
                 "program_s": float, "program_import_s": float, "program_floor_s": float,
                 "program_alone_s": float,
                 # what a rule saves per run in the program: the paired rounds' median and 90% interval
                 "import_gap_s": Signed, "import_gap_lo_s": Signed, "import_gap_hi_s": Signed,
                 "floor_gap_s": Signed, "floor_gap_lo_s": Signed, "floor_gap_hi_s": Signed}


PROGRAM = ("program_s", "program_import_s", "program_floor_s", "program_alone_s", "import_gap_s", "import_gap_lo_s",
           "import_gap_hi_s", "floor_gap_s", "floor_gap_lo_s", "floor_gap_hi_s")


@dataclass
class Replay:
    """The isolated replay of one signature: a measurement, or ``error`` saying why not."""

    primal_s: float | None = None  # seconds per call without AD
    derived_s: float | None = None  # seconds per gradient through the call as the run served it
    repeats: int = 0
    derived_peak_bytes: int | None = None
    direct_bytes: int | None = None  # peak bytes of the same gradient served by a minimal direct rule
    direct_floor_s: float | None = None  # seconds of that minimal direct rule: the engine's floor
    imports: list[ImportTrial] = field(default_factory=list)
    error: str | None = None
    # what derived_s is made of (profiler.decompose; None in profiles from before it)
    pullback_s: float | None = None  # the pullbacks' own time
    vector_pullback_s: float | None = None  # the part of it that scales with data
    nodes: int | None = None  # tape nodes per call
    operations: int | None = None  # distinct kinds of operation recorded
    chain: int | None = None  # the critical path: the longest chain of nodes each computed from the last
    lines: int | None = None  # source lines of a user function
    rule_call_s: float | None = None  # what the engine adds to a call one rule serves
    work_s: float | None = None  # the pullbacks' NumPy work alone (their VJP expressions)
    lean_pullback_s: float | None = None  # the part of vector_pullback_s a closed-form pullback needs
    closed_fixed_s: float | None = None  # the per-call cost a closed-form pullback pays besides that
    lean_forward_s: float | None = None  # a hand-written forward: its recorded operations alone
    floor_pullback_s: float | None = None  # a minimal rule's pullback alone (making its zero gradients)
    # the gradients of the functions handed to grad that call it, seconds per run, timed in turn:
    program_s: float | None = None  # as the run served them
    program_import_s: float | None = None  # with its best library rule imported
    program_floor_s: float | None = None  # with a minimal rule for it (its primal, zero gradients)
    program_alone_s: float | None = None  # per call: its own replayed gradient, timed in the same rounds
    # what the import and the minimal rule save per run there: the median of the rounds' paired
    # differences and its 90% interval (measure.Rounds.difference)
    import_gap_s: float | None = None
    import_gap_lo_s: float | None = None
    import_gap_hi_s: float | None = None
    floor_gap_s: float | None = None
    floor_gap_lo_s: float | None = None
    floor_gap_hi_s: float | None = None

    def forget_program(self) -> None:
        """Drop the in-program measurements (a what-if that failed part way)."""
        for k in PROGRAM:
            setattr(self, k, None)

    @property
    def measured(self) -> bool:
        return self.error is None and self.primal_s is not None and self.derived_s is not None

    @property
    def ratio(self) -> float | None:
        """derived / primal: the AD overhead factor."""
        return self.derived_s / max(self.primal_s, 1e-12) if self.measured else None

    def to_json(self) -> dict:
        if self.error is not None:
            return {"error": self.error}
        return {"primal_s": self.primal_s, "derived_s": self.derived_s, "ratio": self.ratio, "repeats": self.repeats,
                "derived_peak_bytes": self.derived_peak_bytes, "direct_bytes": self.direct_bytes,
                "direct_floor_s": self.direct_floor_s, "imports": [i.to_json() for i in self.imports],
                **{k: getattr(self, k) for k in DECOMPOSITION}}
