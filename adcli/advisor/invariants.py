"""What advice must never say: numbers that contradict each other (docs/advisor.md § Invariants).

``violations`` lists every breach in a set of suggestions; the tests run it over the bundled
workloads and synthetic profiles, and the corpus harness over every profile it makes."""

from __future__ import annotations

import re

from ..units import duration
from .choose import KEEP_DERIVED, Suggestion
from .options import HAND_WRITE

_PARTS = re.compile(r"^derived (\S+ \S+) per call = primal (\S+ \S+) \+ pullbacks (\S+ \S+) \(\d+ nodes\) \+ "
                    r"machinery (\S+ \S+)$")
_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}
# How long a reason line may be, less the names it quotes (a signature can be any length).
MAX_REASON = 100


def seconds(text: str) -> float:
    """"1.23 ms" -> 0.00123 (units.duration's output read back)."""
    number, unit = text.split()
    return float(number) * _UNITS[unit]


def rounding(text: str) -> float:
    """How far the value printed as ``text`` ("1.23 ms") can be from the value: half its last digit."""
    number, unit = text.split()
    decimals = len(number.split(".")[1]) if "." in number else 0
    return 0.5 * 10.0 ** -decimals * _UNITS[unit]


def violations(suggestions: list[Suggestion], gradient_s: float) -> list[str]:
    """Each contradiction in ``suggestions`` (advice for a gradient time of ``gradient_s``)."""
    out = []
    names = sorted({str(s.signature) for s in suggestions} | {s.rule for s in suggestions if s.rule}, key=len, reverse=True)
    for s in suggestions:
        name = str(s.signature)
        taken = s.action != KEEP_DERIVED
        if taken and s.rule_s is not None:
            # a rule still computes its forward: an import the primal it calls, a hand-written rule
            # at least its recorded operations (Cost.hand_forward_s)
            lean = (s.decomposition or {}).get("lean_forward_s") if s.action == HAND_WRITE else None
            least = s.primal_s if lean is None else lean
            if least is not None and s.rule_s < least * (1 - 1e-9):
                out.append(f"{name}: rule {s.rule_s!r} per call below the forward it computes {least!r}")
            if s.derived_s is not None and s.rule_s > s.derived_s * (1 + 1e-9):
                out.append(f"{name}: rule {s.rule_s!r} per call above the derived {s.derived_s!r} it replaces")
            if not any(r.startswith(f"rule {duration(s.rule_s)} per call") for r in s.reasons):
                out.append(f"{name}: no reason gives the table's rule cost {duration(s.rule_s)}")
        if taken and not (s.saving_low_s <= s.saving_s * (1 + 1e-9) and s.saving_s <= s.saving_high_s * (1 + 1e-9)):
            out.append(f"{name}: saving {s.saving_s!r} outside its range {s.saving_low_s!r}-{s.saving_high_s!r}")
        if s.saving_s > gradient_s * (1 + 1e-9):
            out.append(f"{name}: saving {s.saving_s!r} above the gradient time {gradient_s!r}")
        if taken and s.burden_share is not None and s.saving_low_s < s.burden_share * gradient_s * (1 - 1e-9):
            out.append(f"{name}: advised though its saving's range reaches below its burden")
        for r in s.reasons:
            m = _PARTS.match(r)
            if m:
                whole, *parts = (seconds(g) for g in m.groups())
                # each number printed to 3 significant digits: the sum is the whole within their rounding
                if abs(sum(parts) - whole) > sum(rounding(g) for g in m.groups()) * (1 + 1e-9):
                    out.append(f"{name}: the parts of {r!r} do not add up")
            bare = r
            for n in names:
                bare = bare.replace(n, "")
            if len(bare) > MAX_REASON:
                out.append(f"{name}: a reason of {len(bare)} characters besides the names it quotes: {r[:60]!r}...")
    return out
