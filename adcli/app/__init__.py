"""The application layer: each command of ``adcli`` as one function returning a typed result.

The CLI parses options, calls one of these, renders the result (``adcli.render.render``) and
maps errors to exit statuses; a notebook or another tool can call them directly.
"""

from .advice import Advice, advise
from .check import CheckReport, RuleCheck, check
from .compare import Comparison, compare
from .export import KINDS as EXPORT_KINDS
from .export import Export, export
from .profiling import ProfileRun, ProfileView, profile, show
from .rules import RuleInfo, RuleListing, rules_list, rules_show
from .scaling import parse_scale

__all__ = [
    "Advice", "advise", "CheckReport", "RuleCheck", "check", "Comparison", "compare", "Export", "export",
    "EXPORT_KINDS", "ProfileRun", "ProfileView", "profile", "show", "RuleInfo", "RuleListing", "rules_list", "rules_show",
    "parse_scale",
]
