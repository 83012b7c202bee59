"""adcli: a rule-selection advisor for reverse-mode AD of NumPy code.

Glossary (the layers: docs/architecture.md):

tracer      the object that stands for a value while the engine records a function
tape        the record of one forward pass: primitive applications in order, with what each pullback needs
primitive   an operation the engine treats as atomic: it has a rule and is never looked into
rule        forward computation + pullback for one signature: native, imported or hand-written
derived     what the engine does without a rule: run the body with tracers, record its primitives
signature   a callable plus the concrete types of its arguments, e.g. numpy.kron(f64[2d], f64[2d])
profile     what `adcli profile` measured: the signature call tree, per-signature costs, sample inputs
suggestion  one ranked piece of advice for one signature: action, saving, reasons
"""

from .errors import AdcliError
from .version import __version__

__all__ = ["grad", "value_and_grad", "stop_gradient", "profile", "rules", "AdcliError", "__version__"]

_ENGINE = ("grad", "value_and_grad", "stop_gradient")


def __getattr__(name: str):
    """``adcli.grad`` & co.: the engine, loaded on first use, so that the ``adcli`` command,
    whose package this is, answers a Ctrl-C while NumPy and the engine load (adcli/__main__.py);
    ``adcli.profile``: the profiler, and ``adcli.rules`` (declaring and installing rules),
    loaded on first use."""
    if name in _ENGINE:
        from . import engine

        value = globals()[name] = getattr(engine, name)  # found here from now on, without this call
        return value
    if name == "rules":
        import adcli.rules

        return adcli.rules
    if name == "profile":
        from .render.notebook import profile  # the app's recording, its results displayed

        return profile
    raise AttributeError(f"module 'adcli' has no attribute {name!r}")
