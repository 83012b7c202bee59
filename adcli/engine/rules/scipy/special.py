"""Native rules for SciPy's special-function ufuncs (``scipy.special.gammaln`` and kin).

SciPy's special functions are NumPy ufuncs: called with a traced value they reach the Tracer's
``__array_ufunc__`` like ``np.sin`` does, whichever way the program imported them (``sp.gammaln``,
or ``from scipy.special import gammaln`` before adcli was imported). Nothing is patched. SciPy is
not a dependency of the engine and is never imported from here: the first time a ufunc without a
rule meets a traced value, ``lookup`` checks whether it is one of ``scipy.special``'s (only if
the program imported it) and registers the whole table below, from that module.

The VJPs are the textbook derivatives (DLMF), the same as autograd.scipy.special's; each is
checked against central finite differences in tests/test_rules_scipy.py. Where a derivative
with respect to some argument has no closed form (``gammainc``'s shape parameter, ``jv``'s
order), that argument's VJP raises when a gradient flows into it: never a silent zero.
``gammasgn`` is piecewise constant (no gradient, like np.sign).
"""

from __future__ import annotations

import sys

import numpy as np

from ....errors import UnsupportedError
from ...core import Primitive
from ...registry import LAZY_UFUNCS, UFUNCS, defufunc_rule
from ...sums import unbroadcast

_SQRT_PI = np.sqrt(np.pi)
_SQRT_2PI = np.sqrt(2.0 * np.pi)


def _table(sp) -> dict:
    """name -> VJPs (one per argument), in terms of the ``scipy.special`` module ``sp``."""
    return {
        "gammaln": (lambda g, ans, x: g * sp.digamma(x),),
        "digamma": (lambda g, ans, x: g * sp.polygamma(1, x),),
        "psi": (lambda g, ans, x: g * sp.polygamma(1, x),),
        "gamma": (lambda g, ans, x: g * ans * sp.digamma(x),),
        "rgamma": (lambda g, ans, x: -g * ans * sp.digamma(x),),
        "erf": (lambda g, ans, x: g * (2.0 / _SQRT_PI) * np.exp(-x * x),),
        "erfc": (lambda g, ans, x: -g * (2.0 / _SQRT_PI) * np.exp(-x * x),),
        "erfinv": (lambda g, ans, x: g * (_SQRT_PI / 2.0) * np.exp(ans * ans),),
        "erfcinv": (lambda g, ans, x: -g * (_SQRT_PI / 2.0) * np.exp(ans * ans),),
        "expit": (lambda g, ans, x: g * ans * (1.0 - ans),),
        "logit": (lambda g, ans, x: g / (x * (1.0 - x)),),
        "log_expit": (lambda g, ans, x: g * sp.expit(-x),),
        "ndtr": (lambda g, ans, x: g * np.exp(-0.5 * x * x) / _SQRT_2PI,),
        "log_ndtr": (lambda g, ans, x: g * np.exp(-0.5 * x * x - ans) / _SQRT_2PI,),
        "ndtri": (lambda g, ans, x: g * _SQRT_2PI * np.exp(0.5 * ans * ans),),
        "i0": (lambda g, ans, x: g * sp.i1(x),),
        "i1": (lambda g, ans, x: g * 0.5 * (sp.i0(x) + sp.iv(2, x)),),
        "i0e": (lambda g, ans, x: g * (sp.i1e(x) - np.sign(x) * ans),),
        "i1e": (lambda g, ans, x: g * (0.5 * (sp.i0e(x) + sp.ive(2, x)) - np.sign(x) * ans),),
        "j0": (lambda g, ans, x: -g * sp.j1(x),),
        "j1": (lambda g, ans, x: g * 0.5 * (sp.j0(x) - sp.jv(2, x)),),
        "y0": (lambda g, ans, x: -g * sp.y1(x),),
        "y1": (lambda g, ans, x: g * 0.5 * (sp.y0(x) - sp.yv(2, x)),),
        "entr": (lambda g, ans, x: g * (-np.log(x) - 1.0),),
        "xlogy": (lambda g, ans, x, y: g * np.log(y), lambda g, ans, x, y: g * x / y),
        "xlog1py": (lambda g, ans, x, y: g * np.log1p(y), lambda g, ans, x, y: g * x / (1.0 + y)),
        "betaln": (lambda g, ans, a, b: g * (sp.digamma(a) - sp.digamma(a + b)),
                   lambda g, ans, a, b: g * (sp.digamma(b) - sp.digamma(a + b))),
        "rel_entr": (lambda g, ans, x, y: g * (np.log(x / y) + 1.0), lambda g, ans, x, y: -g * x / y),
        "kl_div": (lambda g, ans, x, y: g * np.log(x / y), lambda g, ans, x, y: g * (1.0 - x / y)),
        "beta": (lambda g, ans, a, b: g * ans * (sp.digamma(a) - sp.digamma(a + b)),
                 lambda g, ans, a, b: g * ans * (sp.digamma(b) - sp.digamma(a + b))),
        "gammainc": (_none("gammainc", "its shape a"),
                     lambda g, ans, a, x: g * np.exp((a - 1.0) * np.log(x) - x - sp.gammaln(a))),
        "gammaincc": (_none("gammaincc", "its shape a"),
                      lambda g, ans, a, x: -g * np.exp((a - 1.0) * np.log(x) - x - sp.gammaln(a))),
        "betainc": (_none("betainc", "its parameter a"), _none("betainc", "its parameter b"),
                    lambda g, ans, a, b, x: unbroadcast(
                        g * np.exp((a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - sp.betaln(a, b)), x)),
        "jv": (_none("jv", "its order v"), lambda g, ans, v, x: g * 0.5 * (sp.jv(v - 1, x) - sp.jv(v + 1, x))),
        "yv": (_none("yv", "its order v"), lambda g, ans, v, x: g * 0.5 * (sp.yv(v - 1, x) - sp.yv(v + 1, x))),
        "yn": (_none("yn", "its order n"), lambda g, ans, v, x: g * 0.5 * (sp.yv(v - 1, x) - sp.yv(v + 1, x))),
        "iv": (_none("iv", "its order v"), lambda g, ans, v, x: g * 0.5 * (sp.iv(v - 1, x) + sp.iv(v + 1, x))),
        "ive": (_none("ive", "its order v"),
                lambda g, ans, v, x: g * (0.5 * (sp.ive(v - 1, x) + sp.ive(v + 1, x)) - np.sign(x) * ans)),
        "gammasgn": (lambda g, ans, x: np.zeros(np.shape(x)),),  # piecewise constant
        "kv": (_none("kv", "its order v"), lambda g, ans, v, x: -g * 0.5 * (sp.kv(v - 1, x) + sp.kv(v + 1, x))),
    }


def _none(name: str, what: str):
    """The VJP of an argument a function has no derivative for: reached only when that argument
    is traced and the gradient flows through the call, where it raises (never a silent zero)."""

    def refuse(g, ans, *args):
        raise UnsupportedError(f"scipy.special.{name} has no derivative with respect to {what}, which is traced: "
                               "pass a plain value there (adcli.stop_gradient) or write a rule (`adcli export`)")

    return refuse


NAMES = frozenset(_table(None))  # the functions covered (the VJPs are not called here)
_done: dict = {}  # scipy.special module -> how many rules it got


def install(sp) -> int:
    """Register the rules for the ufuncs of the ``scipy.special`` module ``sp``; returns how
    many. Idempotent."""
    if sp not in _done:
        n = 0
        for name, vjps in _table(sp).items():
            ufunc = getattr(sp, name, None)
            if isinstance(ufunc, np.ufunc) and ufunc.nin == len(vjps) and ufunc.nout == 1 and ufunc not in UFUNCS:
                defufunc_rule(ufunc, Primitive(f"scipy.special.{name}", ufunc, *vjps))
                n += 1
        _done[sp] = n
    return _done[sp]


def lookup(ufunc) -> Primitive | None:
    """The rule of ``ufunc`` if it is one of ``scipy.special``'s covered here (installing the
    table on first use), else None. Never imports SciPy."""
    name = getattr(ufunc, "__name__", "")
    if name not in NAMES:  # most misses (np.greater, ...) end here, on the ufunc dispatch path
        return None
    sp = sys.modules.get("scipy.special")
    if sp is None or getattr(sp, name, None) is not ufunc:
        return None
    install(sp)
    return UFUNCS.get(ufunc)


LAZY_UFUNCS.append(lookup)
