"""``adcli compare``: two profiles of the same program, per signature and in total."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.signature import Signature
from ..profiler.model import Profile, SignatureStats
from ..profiler.store import load


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

    @property
    def total_change(self) -> float | None:
        return self.total_after_s / self.total_before_s - 1.0 if self.total_before_s > 0 else None

    def to_json(self) -> dict:
        return {"rows": [r.to_json() for r in self.rows], "total_before_s": self.total_before_s,
                "total_after_s": self.total_after_s, "total_change": self.total_change,
                "gradients": list(self.gradients), "notes": list(self.notes)}


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


def compare(before: str, after: str) -> Comparison:
    """Compare the profiles saved at ``before`` and ``after``."""
    return compare_profiles(load(before), load(after))
