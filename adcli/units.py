"""Units for what adcli prints: one formatter per unit, shared by the advisor's sentences and
every renderer."""

from __future__ import annotations

import re

DASH = "—"  # a value that is unknown or does not apply


def human_bytes(n: float | None) -> str:
    """Decimal units (1 kB = 1000 B), as file sizes are usually shown: 5120000 -> "5.1 MB"."""
    if n is None:
        return DASH
    n = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(round(n, 1)) < 1000 or unit == "TB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def duration(s: float | None) -> str:
    """Seconds with a unit and three significant digits: "1.23 s", "15.5 ms", "120 µs"."""
    if s is None:
        return "unknown"
    if abs(s) >= 1:
        return f"{s:.3g} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def duration_range(low: float, high: float) -> str:
    """Two durations as a range, the unit once when they share it: "5.05–5.43 ms", "980 µs–1.02 ms"."""
    a, b = duration(low), duration(high)
    if a == b:
        return a
    unit = a.rsplit(" ", 1)[-1]
    return f"{a.rsplit(' ', 1)[0]}–{b}" if b.endswith(" " + unit) else f"{a}–{b}"


def percent_range(low: float, high: float) -> str:
    """A relative change as a range, signed, the end nearer zero first: "-38% to -44%",
    "+3% to +9%", "-2% to +5%" (a range that holds zero, low end first)."""
    if low > 0 or high < 0:
        low, high = sorted((low, high), key=abs)
    a, b = f"{low:+.0%}", f"{high:+.0%}"
    return a if a == b else f"{a} to {b}"


def percent(share: float | None) -> str:
    return DASH if share is None else f"{share:.0%}"


def ratio(x: float | None) -> str:
    """An overhead factor: "8.0×"."""
    return DASH if x is None else f"{x:.1f}×"


# C0 and C1 controls, DEL, lone surrogates, and the Unicode bidirectional overrides and isolates
# (which make a terminal show text in another order than it is): escaped, never emitted.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def safe(text) -> str:
    """``text`` (from a profile, a program, an error) with every control character written as
    a Python escape (``\\x1b``): one line, nothing a terminal would act on."""
    return _UNSAFE.sub(lambda m: m.group(0).encode("unicode_escape", "backslashreplace").decode("ascii"), str(text))


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]i?b?|b)?\s*", re.IGNORECASE)
_SCALE = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
          "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def parse_bytes(text: str) -> int:
    """A size as a user writes it, in the units ``human_bytes`` prints: "100MB", "1.5 GB",
    "512kB", "2GiB", "0". Raises ValueError for anything else."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r} is not a size (e.g. 100MB, 1.5GB, 0)")
    size = float(m.group(1)) * _SCALE[(m.group(2) or "").lower().rstrip("b")]
    if size > 2**63:
        raise ValueError(f"{text[:20]!r}... is too large a size" if len(text) > 20 else f"{text!r} is too large a size")
    return int(size)
