"""The typed records a profile holds (docs/profile-format.md): what was measured at a signature
and at a node of the call tree, the run's totals, a call's sample inputs, and what a replay
measured (the import trials, the per-call costs and their decomposition). Pure data."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..engine.signature import Signature
from .schema import Signed


@dataclass
class Allocs:
    """Arrays the engine stored: (count, bytes) in the forward and in the reverse pass."""

    forward: tuple = (0, 0)
    reverse: tuple = (0, 0)

    @property
    def count(self) -> int:
        return self.forward[0] + self.reverse[0]

    @property
    def bytes(self) -> int:
        return self.forward[1] + self.reverse[1]

    def __add__(self, other: "Allocs") -> "Allocs":
        return Allocs((self.forward[0] + other.forward[0], self.forward[1] + other.forward[1]),
                      (self.reverse[0] + other.reverse[0], self.reverse[1] + other.reverse[1]))

    def to_json(self) -> dict:
        return {"forward": list(self.forward), "reverse": list(self.reverse)}



@dataclass
class Totals:
    gradients: int = 0
    forward_s: float = 0.0
    reverse_s: float = 0.0
    # gradients recorded in full (profiler.sampling); the call tree's figures are scaled from
    # them to all ``gradients``. None: every one (profiles from before the field).
    profiled_gradients: int | None = None

    @property
    def sampled(self) -> bool:
        """Whether the call tree's figures were scaled from some of the gradients."""
        return self.profiled_gradients is not None and self.profiled_gradients < self.gradients

    @property
    def gradient_s(self) -> float:
        return self.forward_s + self.reverse_s

    def to_json(self) -> dict:
        return {"gradients": self.gradients, "profiled_gradients": self.profiled_gradients,
                "forward_s": self.forward_s, "reverse_s": self.reverse_s,
                "gradient_s": self.gradient_s}


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
                 "floor_gap_s": Signed, "floor_gap_lo_s": Signed, "floor_gap_hi_s": Signed,
                 # a user function's rule synthesized from its source (adcli.synth), verified on the
                 # sample and timed in the program like the import: or why there is none
                 "program_synth_s": float, "synth_gap_s": Signed, "synth_gap_lo_s": Signed, "synth_gap_hi_s": Signed,
                 "synthesis": str}


PROGRAM = ("program_s", "program_import_s", "program_floor_s", "program_alone_s", "import_gap_s", "import_gap_lo_s",
           "import_gap_hi_s", "floor_gap_s", "floor_gap_lo_s", "floor_gap_hi_s", "program_synth_s", "synth_gap_s",
           "synth_gap_lo_s", "synth_gap_hi_s")


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
    program_synth_s: float | None = None  # with the synthesized rule
    synth_gap_s: float | None = None
    synth_gap_lo_s: float | None = None
    synth_gap_hi_s: float | None = None
    synthesis: str | None = None  # "verified", or why no rule was synthesized or timed (a user function's)

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


@dataclass
class Sample:
    """A call's first arguments, encoded (see :func:`encode`); arrays live in the ``.npz``."""

    args: list
    kwargs: dict

    def to_json(self) -> dict:
        return {"args": self.args, "kwargs": self.kwargs}


@dataclass(kw_only=True)
class Measured:
    """What the run measured at one place (a signature, or a node of the call tree): inclusive
    values cover the callees, ``self_*`` values do not."""

    calls: int = 0
    forward_s: float = 0.0
    self_forward_s: float = 0.0
    reverse_s: float = 0.0
    self_reverse_s: float = 0.0
    primitives: int = 0
    self_primitives: int = 0
    allocs: Allocs = field(default_factory=Allocs)
    self_allocs: Allocs = field(default_factory=Allocs)

    @property
    def gradient_s(self) -> float:
        """Inclusive forward + reverse seconds."""
        return self.forward_s + self.reverse_s

    def _measured_json(self) -> dict:
        return {"calls": self.calls, "forward_s": self.forward_s, "self_forward_s": self.self_forward_s,
                "reverse_s": self.reverse_s, "self_reverse_s": self.self_reverse_s, "primitives": self.primitives,
                "self_primitives": self.self_primitives, "allocs": self.allocs.to_json(),
                "self_allocs": self.self_allocs.to_json()}


@dataclass(kw_only=True)
class SignatureStats(Measured):
    """What the run measured for one signature, summed over its places in the call tree."""

    id: int
    signature: Signature
    kind: str  # "numpy" or "user"
    served_by: str  # the rule source that served most calls (SOURCES)
    served_counts: dict = field(default_factory=dict)
    location: str = ""
    replay: Replay | None = None
    sample: Sample | None = None
    traced: list | None = None  # positions of the arguments that held traced values, in any call
    output: str | None = None  # what its first call returned (OUTPUTS): whether a rule can return it
    lines: int | None = None  # a user function's source lines (what a rule for it re-implements); None: unknown

    @property
    def function(self) -> str:
        return self.signature.function

    def to_json(self) -> dict:
        return {
            "id": self.id, "signature": str(self.signature), "function": self.function, "kind": self.kind,
            "served_by": self.served_by, "served_counts": dict(self.served_counts), "location": self.location,
            "traced": None if self.traced is None else list(self.traced), "output": self.output, "lines": self.lines,
            **self._measured_json(),
            "replay": None if self.replay is None else self.replay.to_json(),
            "sample": None if self.sample is None else self.sample.to_json(),
        }


@dataclass(kw_only=True)
class CallTree(Measured):
    """One signature at one place in the call tree (``sig`` 0 is the program root)."""

    sig: int
    children: list = field(default_factory=list)

    def to_json(self) -> list:
        """The tree flat, in pre-order: each node names its ``parent`` by position (the root,
        first, has none), so the document's size grows with the number of nodes, not with the
        square of the depth, and no reader needs to recurse."""
        out: list = []
        stack = [(self, None)]
        while stack:
            node, parent = stack.pop()
            out.append({"parent": parent, "sig": node.sig, **node._measured_json()})
            me = len(out) - 1
            stack.extend((c, me) for c in reversed(node.children))
        return out


def recurrent(nodes: int | None, operations: int | None, chain: int | None) -> bool:
    """Whether a call's operations, as a replay's decomposition counts them (``nodes``, distinct
    ``operations``, the ``chain`` of dependence through its tape: profiler/decompose.py), form a
    recurrence (a time loop, a stack of layers, a Horner scheme: the critical path repeats
    operations, each step needing the last) rather than a map or a reduction (whose chains are as
    long as one element's work): only the latter's runs of scalar operations can become one
    vectorised call (docs/advisor.md § What is estimated)."""
    return bool(nodes and operations and chain) and chain > operations
