"""Thresholds: when a rule is worth its burden. From options and ``[tool.adcli]`` in pyproject.toml."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields

from ..errors import AdcliError


class ThresholdError(AdcliError):
    """Thresholds that cannot hold together, or a malformed [tool.adcli] table."""


@dataclass(frozen=True)
class Thresholds:
    """``import_burden`` / ``handwrite_burden``: the saving (as a share of the total gradient
    time) below which importing / hand-writing a rule is not worth it. An import is the lighter
    burden (a well-tested library rule), so its threshold must not exceed hand-writing's.
    ``import_tolerance``: an import costing more than this multiple of the estimated cost of a
    direct rule is advised against; ``alloc_tolerance``: likewise for one whose peak memory is
    more than this multiple of what a direct rule must allocate (its output and one gradient per
    argument). ``fallback_factor``: the estimated cost of a hand-written
    rule, as a multiple of the primal, when the profile has no measured import to calibrate on
    (profiles without a cost decomposition). ``burden_size``: a hand-written rule's burden is
    ``handwrite_burden * (1 + size / burden_size)``, its size being operations + arguments +
    lines / 5. ``nest_share``: among nested candidates, the functions inside a caller are advised
    instead of the caller when together they save at least this share of what its rule would.
    """

    import_burden: float = field(default=0.02, metadata={
        "help": "Least saving, as a share of the gradient time, worth importing a rule"})
    handwrite_burden: float = field(default=0.10, metadata={
        "help": "Least saving, as a share of the gradient time, worth hand-writing a rule"})
    import_tolerance: float = field(default=1.5, metadata={
        "help": "Advise against an import costing more than this multiple of a direct rule's estimate"})
    fallback_factor: float = field(default=3.0, metadata={
        "help": "A hand-written rule's cost as a multiple of the primal when no import was measured"})
    alloc_tolerance: float = field(default=2.0, metadata={
        "help": "Advise against an import whose peak memory exceeds this multiple of a minimal direct rule's"})
    burden_size: float = field(default=20.0, metadata={
        "help": "A hand-written rule's size (operations + arguments + lines/5) at which its burden doubles"})
    nest_share: float = field(default=0.8, metadata={
        "help": "Advise the functions inside a caller when together they save this share of what its rule would"})

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise ThresholdError(f"threshold {f.name} must be a finite non-negative number, not {v!r}")
        if self.import_burden > self.handwrite_burden:
            raise ThresholdError(
                f"contradictory thresholds: import_burden {self.import_burden} exceeds handwrite_burden "
                f"{self.handwrite_burden}, but importing a tested rule is the lighter burden"
            )
        if self.import_tolerance < 1.0:
            raise ThresholdError(f"import_tolerance {self.import_tolerance} below 1 would refuse every import")
        if self.burden_size <= 0:
            raise ThresholdError(f"burden_size {self.burden_size} must be positive")
        if self.nest_share > 1.0:
            raise ThresholdError(f"nest_share {self.nest_share} above 1 would never prefer a smaller function")
        if self.fallback_factor < 1.0:
            raise ThresholdError(f"fallback_factor {self.fallback_factor} below 1: a rule cannot be faster than its primal")


def from_pyproject(start: str = ".") -> dict:
    """``[tool.adcli]`` of the nearest pyproject.toml above ``start`` (empty if none)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return {}
    folder = os.path.abspath(start)
    while True:
        path = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(path):
            try:
                with open(path, "rb") as f:
                    tool = tomllib.load(f).get("tool", {})
                table = tool.get("adcli", {}) if isinstance(tool, dict) else None
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ThresholdError(f"cannot read [tool.adcli] from {path}: {exc}") from None
            if table is None:
                raise ThresholdError(f"{path}: [tool] must be a table")
            if not isinstance(table, dict):
                raise ThresholdError(f"{path}: [tool.adcli] must be a table")
            known = {f.name for f in fields(Thresholds)}
            unknown = sorted(set(table) - known)
            if unknown:
                raise ThresholdError(
                    f"{path}: unknown [tool.adcli] key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
                )
            return table
        parent = os.path.dirname(folder)
        if parent == folder:
            return {}
        folder = parent


def thresholds(options: dict, start: str = ".") -> Thresholds:
    """Options given on the command line win over pyproject.toml, which wins over defaults.
    Every field of Thresholds is a command-line option and a [tool.adcli] key (the CLI builds
    its options from the fields and their ``help``)."""
    merged = {**from_pyproject(start), **{k: v for k, v in options.items() if v is not None}}
    return Thresholds(**merged)
