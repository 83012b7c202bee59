"""The application layer: each command of ``adcli`` as one function returning a typed result.

The CLI parses options, calls one of these, renders the result (``adcli.render.render``) and
maps errors to exit statuses; a notebook or another tool can call them directly. What is named
here is all the CLI uses below the renderers: the commands and their results, the findings they
raise (exit status 1: ``IncompleteProfileError``, ``NoGradientError``), the options they accept
(app/options.py) and the one writer of their outputs (app/output.py).
"""

from ..profiler.api import NoGradientError, report_error
from .advice import Advice, IncompleteProfileError, advise
from .check import CheckReport, RuleCheck, check
from .compare import Comparison, compare
from .corpus import CorpusAdvice, CorpusRun, corpus_export, corpus_run, corpus_suggest
from .export import Export, export
from .options import (
    ADVICE_SORTS,
    AUTO,
    COMPARE_BUDGET_S,
    DEFAULT_PROFILE,
    DEFAULT_REPLAYS_TOTAL,
    DEFAULT_SAMPLE_BUDGET,
    EXPORT_KINDS,
    OVERHEAD_BUDGET,
    PROFILE_SORTS,
    REPLAY_CAP_S,
    REPLAY_FLOOR_S,
    RULE_SOURCES,
    TIERS,
    Thresholds,
)
from .output import check_profiles_output, check_speedscope_target, write_output
from .profiling import FlameGraph, ProfileRun, ProfileView, profile, show
from .report import Report, report
from .rules import RuleInfo, RuleListing, rules_list, rules_show
from .scaling import parse_scale

__all__ = [
    # the commands and their results
    "Advice", "advise", "CheckReport", "RuleCheck", "check", "Comparison", "compare", "Export", "export",
    "FlameGraph", "ProfileRun", "ProfileView", "profile", "show", "Report", "report", "RuleInfo", "RuleListing",
    "rules_list", "rules_show", "parse_scale", "CorpusRun", "corpus_run", "CorpusAdvice", "corpus_suggest",
    "corpus_export",
    # findings (exit status 1), and the profiled program's own traceback
    "IncompleteProfileError", "NoGradientError", "report_error",
    # what the commands accept (app/options.py)
    "ADVICE_SORTS", "AUTO", "COMPARE_BUDGET_S", "DEFAULT_PROFILE", "DEFAULT_REPLAYS_TOTAL", "DEFAULT_SAMPLE_BUDGET",
    "EXPORT_KINDS", "OVERHEAD_BUDGET", "PROFILE_SORTS", "REPLAY_CAP_S", "REPLAY_FLOOR_S", "RULE_SOURCES", "TIERS",
    "Thresholds",
    # their outputs (app/output.py)
    "check_profiles_output", "check_speedscope_target", "write_output",
]
