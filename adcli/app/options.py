"""What the commands accept: the choices and defaults of their options, each from the layer that
owns it, named in one place. The command line (adcli/cli.py) builds its options from these and
from nothing below the app layer; a tool of your own that drives ``adcli.app`` offers the same.

``Thresholds``' fields are the options of every command that advises (``suggest``, ``export``,
``report``), each with its default and ``help`` (advisor/config.py).
"""

from __future__ import annotations

from ..advisor.choose import SORTS as ADVICE_SORTS
from ..advisor.choose import TIERS
from ..advisor.config import Thresholds
from ..profiler.api import AUTO, DEFAULT_REPLAYS_TOTAL, DEFAULT_SAMPLE_BUDGET, REPLAY_CAP_S, REPLAY_FLOOR_S
from ..profiler.sampling import OVERHEAD_BUDGET
from ..rules.listing import SOURCES as RULE_SOURCES
from .advice import DEFAULT_PROFILE
from .export import KINDS as EXPORT_KINDS
from .profiling import SORTS as PROFILE_SORTS
from .timing import DEFAULT_BUDGET_S as COMPARE_BUDGET_S

__all__ = [
    "ADVICE_SORTS", "TIERS", "Thresholds", "AUTO", "DEFAULT_REPLAYS_TOTAL", "DEFAULT_SAMPLE_BUDGET", "REPLAY_CAP_S",
    "REPLAY_FLOOR_S", "OVERHEAD_BUDGET", "RULE_SOURCES", "DEFAULT_PROFILE", "EXPORT_KINDS", "PROFILE_SORTS",
    "COMPARE_BUDGET_S",
]
