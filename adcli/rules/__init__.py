"""Declaring rules, importing autograd's, and the catalog of what can be imported.

>>> import numpy as np, adcli.rules
>>> @adcli.rules.rule(np.kron, "f64[2d]", "f64[2d]")        # doctest: +SKIP
... def kron(a, b): ...
>>> adcli.rules.import_rule(np.kron, "f64[2d]", "f64[2d]")  # doctest: +SKIP
>>> adcli.rules.install("rules.py")   # a rules file serving in this program   # doctest: +SKIP
"""

from .autograd_catalog import catalog
from .autograd_import import import_rule
from .declare import Rule, register, rule, rules_for, unregister
from .dispatch import dispatch, original
from .install import install, uninstall

__all__ = ["Rule", "rule", "register", "unregister", "rules_for", "dispatch", "original", "import_rule", "catalog",
           "install", "uninstall"]
