"""SciPy's functions that call back into the program (root finders, optimisers, quadratures,
ODE solvers other than odeint), which have no rule: traced values reaching them are refused
with adcli's one-line error, never lost and never left to fail inside SciPy.

Such a function reaches a traced value two ways:

* **as an argument** (``minimize(f, x0)`` with a traced ``x0``, ``args=(theta,)``): its result
  depends on the value through the optimum or the integral, whose derivative (implicit
  differentiation, the adjoint of the solver) no rule here provides;
* **through the callback's closure** (``brentq(lambda t: t - x[0], -2, 2)``): the callback
  returns traced values, and SciPy's compiled code then converts them, where adcli's error is
  raised inside C and comes out as SciPy's own (``SystemError``, "not a proper array of
  floats", "must return a scalar") or not at all.

Each function is a library dispatch point (engine.library) whose every call goes through
:func:`guard`: an argument holding a traced value is refused at once; each callable argument is
wrapped so that a traced result is refused in the callback itself, before SciPy sees it (a
Python exception from a callback is one SciPy passes on). Plain calls pay one wrapper call per
evaluation of the callback, and only after the program's first gradient (when the patch is set).
"""

from __future__ import annotations

import functools

from ..errors import TracingError, UnsupportedError
from .core import has_tracer
from .fills import unfill
from .library import library_guard
from .where import user_location

NAMES = (
    "scipy.optimize.minimize", "scipy.optimize.minimize_scalar", "scipy.optimize.root", "scipy.optimize.root_scalar",
    "scipy.optimize.brentq", "scipy.optimize.brenth", "scipy.optimize.ridder", "scipy.optimize.bisect",
    "scipy.optimize.toms748", "scipy.optimize.newton", "scipy.optimize.fsolve", "scipy.optimize.fixed_point",
    "scipy.optimize.least_squares", "scipy.optimize.curve_fit", "scipy.optimize.leastsq",
    "scipy.optimize.basinhopping", "scipy.optimize.differential_evolution", "scipy.optimize.dual_annealing",
    "scipy.optimize.shgo", "scipy.optimize.direct", "scipy.optimize.golden", "scipy.optimize.brent",
    "scipy.optimize.bracket", "scipy.optimize.fminbound", "scipy.optimize.fmin", "scipy.optimize.fmin_powell",
    "scipy.optimize.fmin_cg", "scipy.optimize.fmin_bfgs", "scipy.optimize.fmin_ncg", "scipy.optimize.fmin_l_bfgs_b",
    "scipy.optimize.fmin_tnc", "scipy.optimize.fmin_cobyla", "scipy.optimize.fmin_slsqp",
    "scipy.optimize.approx_fprime", "scipy.optimize.check_grad", "scipy.optimize.line_search",
    "scipy.integrate.quad", "scipy.integrate.dblquad", "scipy.integrate.tplquad", "scipy.integrate.nquad",
    "scipy.integrate.quad_vec", "scipy.integrate.fixed_quad", "scipy.integrate.solve_ivp",
)

_WHAT = ("no rule differentiates its result (through an optimum, a root or an integral), so the gradient "
         "would be lost")


class _TracedResult(TracingError):
    """A callback returned a traced value (raised inside the callback, where SciPy passes it on)."""


def _wrap(fn, name: str):
    @functools.wraps(fn)
    def callback(*args, **kwargs):
        out = fn(*args, **kwargs)
        if has_tracer(out):
            raise _TracedResult(name)
        return out

    return callback


def guard(name: str, original, args: tuple, kwargs: dict):
    """Call ``original`` with its callbacks wrapped; refuse traced arguments and results."""
    args, kwargs = unfill(args), unfill(kwargs)  # arrays made by np.zeros & co. (engine.fills)
    if has_tracer(args) or has_tracer(kwargs):
        raise UnsupportedError(f"{name}(...) at {user_location(3)} was handed a traced value: {_WHAT}. Pass plain "
                               "values (adcli.stop_gradient(x)), or write a rule for the function that calls it "
                               "(`adcli export`)")
    args = tuple(_wrap(a, name) if callable(a) and not isinstance(a, type) else a for a in args)
    kwargs = {k: _wrap(v, name) if callable(v) and not isinstance(v, type) else v for k, v in kwargs.items()}
    try:
        return original(*args, **kwargs)
    except TracingError:  # the callback's result, or a conversion inside it, read a traced value
        raise TracingError(f"{name}(...) at {user_location(3)} calls back a function that computes with a traced "
                           f"value (from its closure or a global): {_WHAT}. Pass plain values "
                           "(adcli.stop_gradient(x)), or write a rule for the function that calls it "
                           "(`adcli export`)") from None
    except SystemError as e:  # a TracingError raised inside SciPy's C code, set but not returned
        if isinstance(e.__cause__ or e.__context__, TracingError):
            raise TracingError(f"{name}(...) at {user_location(3)} calls back a function that computes with a "
                               f"traced value: {_WHAT}. Pass plain values (adcli.stop_gradient(x))") from None
        raise


for _name in NAMES:
    library_guard(_name, functools.partial(guard, _name))
