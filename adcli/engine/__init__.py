"""adcli's AD engine: tracers, tape, rules, dispatch and the reverse pass (see DESIGN.md § Engine)."""

from . import (  # noqa: F401  (fill the registry)
    callbacks,  # noqa: F401  (scipy.optimize and the quadratures: traced values refused, engine.library)
    rules_advised,  # noqa: F401  (the advisor's library-tier verdicts, docs/advisor.md)
    rules_contract,
    rules_counting,  # noqa: F401  (unique, bincount, histogram: their traced float outputs)
    rules_derived,  # noqa: F401  (the verified derivations)
    rules_elementwise,
    rules_linalg,
    rules_norms,  # noqa: F401  (np.linalg.norm, vector_norm, matrix_norm)
    rules_numpy_extra,  # noqa: F401  (fftshift, linspace, real/imag, nan_to_num, lists of traced values)
    rules_odeint,  # noqa: F401  (scipy.integrate.odeint, through engine.library)
    rules_reduce,
    rules_scipy,  # noqa: F401  (scipy.special's ufuncs, registered on first use)
    rules_scipy_functions,  # noqa: F401  (SciPy's Python functions, through engine.library)
    rules_shape,
    rules_stats,  # noqa: F401  (scipy.stats distributions, through engine.library)
    tracer_api,  # noqa: F401  (give Tracer its ndarray surface)
)
from .core import Tracer
from .grad import grad, stop_gradient, value_and_grad

__all__ = ["Tracer", "grad", "value_and_grad", "stop_gradient"]
