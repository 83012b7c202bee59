"""Compare two profiles of the same program: per signature and in total (``adcli compare``)."""

from __future__ import annotations


def compare(before: dict, after: dict) -> dict:
    """Rows per signature (in either profile) and totals; times are per program run."""
    def index(p):
        return {s["signature"]: s for s in p["signatures"]}

    b, a = index(before), index(after)
    rows = []
    for name in sorted(set(b) | set(a), key=lambda n: -_time(b.get(n) or a.get(n))):
        sb, sa = b.get(name), a.get(name)
        tb, ta = _time(sb), _time(sa)
        rows.append({
            "signature": name,
            "before_s": tb if sb else None, "after_s": ta if sa else None,
            "change": (ta / tb - 1.0) if sb and sa and tb > 0 else None,
            "before_bytes": _bytes(sb), "after_bytes": _bytes(sa),
            "before_served_by": sb["served_by"] if sb else None, "after_served_by": sa["served_by"] if sa else None,
        })
    tb, ta = before["totals"]["gradient_s"], after["totals"]["gradient_s"]
    return {"rows": rows, "total_before_s": tb, "total_after_s": ta,
            "total_change": (ta / tb - 1.0) if tb > 0 else None,
            "gradients": [before["totals"]["gradients"], after["totals"]["gradients"]]}


def _time(s) -> float:
    return (s["forward_s"] + s["reverse_s"]) if s else 0.0


def _bytes(s):
    if not s:
        return None
    return sum(int(v[1]) for v in (s.get("allocs") or {}).values())
