"""adcli: a rule-selection advisor for reverse-mode AD of NumPy code.

Glossary (see DESIGN.md):

tracer      the object that stands for a value while the engine records a function
tape        the record of one forward pass: primitive applications in order, with what each pullback needs
primitive   an operation the engine treats as atomic: it has a rule and is never looked into
rule        forward computation + pullback for one signature: native, imported or hand-written
derived     what the engine does without a rule: run the body with tracers, record its primitives
signature   a callable plus the concrete types of its arguments, e.g. numpy.kron(f64[2d], f64[2d])
profile     what `adcli profile` measured: the signature call tree, per-signature costs, sample inputs
suggestion  one ranked piece of advice for one signature: action, saving, reasons
"""

from .engine import grad, stop_gradient, value_and_grad
from .errors import AdcliError

__version__ = "0.1.0"
__all__ = ["grad", "value_and_grad", "stop_gradient", "AdcliError", "__version__"]
