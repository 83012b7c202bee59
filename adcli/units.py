"""Units for what adcli prints: the advisor's sentences and the renderers share them."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    """Decimal units (1 kB = 1000 B), as file sizes are usually shown: 5120000 -> "5.1 MB"."""
    n = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(round(n, 1)) < 1000 or unit == "TB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")
