"""The advisor: from loaded profiles to ranked suggestions. No I/O, no user code.

Data flows one way: profiles -> costs per signature (costs.py) -> each signature's options
(options.py) -> the rule set chosen in two tiers over the call tree (tiers.py) -> Suggestion
objects with their reasons (choose.py, explain.py), which renderers print. The model is documented in
docs/advisor.md.
"""

from .choose import ACTIONS, HAND_WRITE, IMPORT, KEEP_DERIVED, AdviceSummary, Suggestion, suggest
from .config import Thresholds

__all__ = ["ACTIONS", "AdviceSummary", "HAND_WRITE", "IMPORT", "KEEP_DERIVED", "Suggestion", "Thresholds", "suggest"]
