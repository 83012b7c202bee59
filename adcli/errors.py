"""adcli's exceptions. The CLI turns every AdcliError into a one-line message in one place."""

from __future__ import annotations


class AdcliError(Exception):
    """Base class: a problem adcli can explain in one sentence."""


class TracingError(AdcliError, TypeError):
    """A traced value was used in a way the engine cannot follow without losing the gradient
    (``float(x)``, ``math.sin(x)``, ``np.asarray(x)``, ``plain[i] = x``, ...)."""


class NoRuleError(AdcliError, NotImplementedError):
    """A NumPy callable has neither a rule nor a verified derivation for the signature it was called with."""


class UnsupportedError(AdcliError, TypeError):
    """A NumPy feature the engine refuses rather than risk a wrong gradient (``out=``, in-place
    writes into inputs or views, higher-order differentiation, ...)."""


class GradInputError(AdcliError, TypeError):
    """The function or its arguments do not fit ``grad``: non-scalar output, integer argument in argnums, ..."""


class RuleError(AdcliError):
    """A rule is malformed or broke its contract (wrong cotangent shape or dtype, duplicate registration, ...)."""


class RuleDisagreement(RuleError):
    """Verification found a rule whose gradient differs from finite differences or from another
    rule's on the same inputs: one of them is wrong."""


class SynthesisError(AdcliError):
    """A function's rule cannot be synthesized from its source: a construct outside the subset
    adcli.synth transforms, named with its ``file:line``."""
