"""The advisor: from loaded profiles to ranked suggestions. No I/O, no user code.

Data flows one way: profiles -> costs per signature (costs.py) -> the rule set chosen over the
call tree (choose.py) -> Suggestion objects, which renderers print. The model is documented in
docs/advisor.md.
"""

from .choose import ACTIONS, HAND_WRITE, IMPORT, KEEP_DERIVED, Suggestion, suggest
from .config import Thresholds

__all__ = ["ACTIONS", "HAND_WRITE", "IMPORT", "KEEP_DERIVED", "Suggestion", "Thresholds", "suggest"]
