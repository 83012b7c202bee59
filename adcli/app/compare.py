"""``adcli compare``: two profiles of the same program, per signature and in total; with
``--script``, each side timed with repeats (app/timing.py), the change a range."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..data.model import Profile
from ..data.records import SignatureStats
from ..data.store import load
from ..engine.signature import Signature
from .timing import DEFAULT_BUDGET_S, Timing, time_sides


@dataclass
class ComparisonRow:
    signature: Signature
    before_s: float | None  # inclusive gradient seconds per program run; None: not in that profile
    after_s: float | None
    before_bytes: int | None
    after_bytes: int | None
    before_served_by: str | None
    after_served_by: str | None

    @property
    def change(self) -> float | None:
        if self.before_s is None or self.after_s is None or self.before_s <= 0:
            return None
        return self.after_s / self.before_s - 1.0

    def to_json(self) -> dict:
        return {"signature": str(self.signature), "before_s": self.before_s, "after_s": self.after_s,
                "change": self.change, "before_bytes": self.before_bytes, "after_bytes": self.after_bytes,
                "before_served_by": self.before_served_by, "after_served_by": self.after_served_by}


@dataclass
class Comparison:
    rows: list[ComparisonRow]
    total_before_s: float
    total_after_s: float
    gradients: tuple[int, int]
    notes: list = field(default_factory=list)  # what makes the two runs hard to compare, in words
    timing: Timing | None = None  # each side timed with repeats (None: one run each, the profiles')

    @property
    def total_change(self) -> float | None:
        return self.total_after_s / self.total_before_s - 1.0 if self.total_before_s > 0 else None

    @property
    def verdict(self) -> str:
        """``faster``, ``slower`` or ``within noise`` (the timed sides' ranges overlap); ``untimed``
        without timing: one run each says nothing about noise."""
        if self.timing is None:
            return "untimed"
        if self.timing.within_noise:
            return "within noise"
        return "slower" if self.timing.change[0] > 0 else "faster"

    def slower_beyond(self, share: float) -> bool:
        """Whether the after side is slower beyond noise by more than ``share`` (0.05: 5%): the
        least its change can be exceeds it. Only a timed comparison can say so."""
        return self.timing is not None and self.verdict == "slower" and self.timing.change[0] > share

    def to_json(self) -> dict:
        return {"rows": [r.to_json() for r in self.rows], "total_before_s": self.total_before_s,
                "total_after_s": self.total_after_s, "total_change": self.total_change,
                "gradients": list(self.gradients), "notes": list(self.notes), "verdict": self.verdict,
                "timing": None if self.timing is None else self.timing.to_json()}


def compare_profiles(before: Profile, after: Profile) -> Comparison:
    """Rows per signature (in either profile), most expensive first, and the totals."""
    b = {s.signature: s for s in before.signatures}
    a = {s.signature: s for s in after.signatures}

    def time(s: SignatureStats | None) -> float:
        return s.gradient_s if s is not None else 0.0

    rows = []
    for sig in sorted(set(b) | set(a), key=lambda n: (-time(b.get(n) or a.get(n)), str(n))):
        sb, sa = b.get(sig), a.get(sig)
        rows.append(ComparisonRow(
            sig, sb.gradient_s if sb else None, sa.gradient_s if sa else None,
            sb.allocs.bytes if sb else None, sa.allocs.bytes if sa else None,
            sb.served_by if sb else None, sa.served_by if sa else None))
    notes = []
    programs = [p.command[0] if p.command else "?" for p in (before, after)]
    if programs[0] != programs[1]:
        notes.append(f"the profiles are of different programs ({programs[0]} and {programs[1]}): "
                     "the times are of different workloads")
    if before.totals.gradients != after.totals.gradients:
        notes.append(f"the runs took different numbers of gradients ({before.totals.gradients} and "
                     f"{after.totals.gradients}): the times are per run, not per gradient")
    shares = [p.totals.profiled_gradients / p.totals.gradients if p.totals.sampled else 1.0 for p in (before, after)]
    if max(shares) > 1.5 * min(shares):  # the profiler's own cost differs: sampled or not, or sampled otherwise
        notes.append("the runs recorded different shares of their gradients in full (" +
                     " and ".join(f"{p.totals.profiled_gradients if p.totals.sampled else p.totals.gradients} of "
                                  f"{p.totals.gradients}" for p in (before, after)) +
                     "): the profiler's own cost differs between them; profile both with --every-gradient, or both without")
    notes += [f"before: {p}" for p in before.problems()] + [f"after: {p}" for p in after.problems()]
    return Comparison(rows, before.totals.gradient_s, after.totals.gradient_s,
                      (before.totals.gradients, after.totals.gradients), notes)


def compare(before: str, after: str, script: str | None = None, rules: tuple = (), modules: tuple = (),
            budget: float = DEFAULT_BUDGET_S) -> Comparison:
    """Compare the profiles saved at ``before`` and ``after``. With ``script``, time each side
    with repeats: the gradients of the functions the program hands to grad, without the rules
    files ``rules`` and with them (their functions found in ``script`` and ``modules``)."""
    b, a = load(before), load(after)
    result = compare_profiles(b, a)
    if script is not None:
        result.timing = time_sides(b, a, (before, after), script, tuple(rules), tuple(modules), budget)
        result.notes += [f"not timed: {why}" for why in result.timing.untimed]
    return result


def _program(p: Profile) -> list:
    return [os.path.normpath(p.command[0]), *p.command[1:]] if p.command else []


def superseded(profiles: list) -> dict:
    """{position of a profile: position of its "after"}: a profile of the same command (the
    program and its arguments) run with more rules files (``profile --rules``) is the same
    program after those rules, not a second workload."""
    out = {}
    for i, p in enumerate(profiles):
        later = [j for j, q in enumerate(profiles) if j != i and q.command and _program(q) == _program(p)
                 and set(p.rules) < set(q.rules)]
        if later:
            out[i] = max(later, key=lambda j: len(profiles[j].rules))
    return out
