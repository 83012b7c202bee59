"""Declaring rules, importing autograd's, and the catalog of what can be imported.

>>> import numpy as np, adcli.rules
>>> @adcli.rules.rule(np.kron, "f64[2d]", "f64[2d]")        # doctest: +SKIP
... def kron(a, b): ...
"""

from .declare import Rule, register, rule, rules_for, unregister
from .dispatch import dispatch

__all__ = ["Rule", "rule", "register", "unregister", "rules_for", "dispatch"]
