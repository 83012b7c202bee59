"""Declaring rules, importing autograd's, and the catalog of what can be imported.

>>> import numpy as np, adcli.rules
>>> @adcli.rules.rule(np.kron, "f64[2d]", "f64[2d]")        # doctest: +SKIP
... def kron(a, b): ...
>>> adcli.rules.import_rule(np.kron, "f64[2d]", "f64[2d]")  # doctest: +SKIP
"""

from .declare import Rule, register, rule, rules_for, unregister
from .dispatch import dispatch, original


def import_rule(target, *types, **options):
    """Import autograd's rule for ``target`` restricted to ``types`` (see autograd_import)."""
    from .autograd_import import import_rule as _import

    return _import(target, *types, **options)


def catalog():
    """autograd's importable rules (see autograd_catalog)."""
    from .autograd_catalog import catalog as _catalog

    return _catalog()


__all__ = ["Rule", "rule", "register", "unregister", "rules_for", "dispatch", "original", "import_rule", "catalog"]
