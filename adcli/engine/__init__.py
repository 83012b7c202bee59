"""adcli's AD engine: tracers, tape, rules, dispatch and the reverse pass (docs/architecture.md § engine)."""

from . import (  # noqa: F401
    callbacks,  # scipy.optimize and the quadratures: traced values refused (engine.library)
    core,
    keep,
    rules,  # fill the registry: every native rule and verified derivation
    tracer_api,  # give Tracer its ndarray surface
)
from .core import Tracer
from .grad import grad, stop_gradient, value_and_grad
from .rules import elementwise

__all__ = ["Tracer", "grad", "value_and_grad", "stop_gradient"]


def memory_paths_from(size: int | None) -> None:
    """Take the engine's memory-saving paths from ``size`` elements on: nodes trimmed to what
    their pullbacks read (engine.keep, 256 by default), copies of plain arrays shared
    (engine.keep, 256), VJPs' products written into their own arrays (above 4096); None: the
    defaults. The differential fuzzer sets 1, so that its small arrays take the same paths as a
    program's large ones. (Each is a module global of the module whose hot path reads it.)"""
    trim, share, in_place = _MEMORY_DEFAULTS if size is None else (size, size, size - 1)
    core._SHAPE_ONLY_MIN = tracer_api._SHAPE_ONLY_MIN = trim
    keep._SHARE_MIN = share
    elementwise._IN_PLACE_MIN = in_place


_MEMORY_DEFAULTS = (core._SHAPE_ONLY_MIN, keep._SHARE_MIN, elementwise._IN_PLACE_MIN)
