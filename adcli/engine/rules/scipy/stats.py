"""Native rules for ``scipy.stats`` distributions: ``norm.logpdf(x, loc, scale)`` and kin.

Every method here is elementwise over its broadcast arguments. Its value is SciPy's own (the
original method on the plain values); its VJPs come from the standardised log-density
``l(y; shapes)`` of a location-scale family, with ``y = (x - loc) / scale``:

* ``logpdf = l(y) - log(scale)``: d/dx = l_y / scale, d/dloc = -l_y / scale,
  d/dscale = -(y l_y + 1) / scale, d/dshape = l_shape;
* ``pdf = exp(logpdf)``: the same times the value;
* ``cdf = F(y)``: d/dx = pdf(x), d/dloc = -pdf(x), d/dscale = -y pdf(x); ``sf = 1 - cdf``;
  ``logcdf`` and ``logsf`` divide by cdf and sf (as ``exp(logpdf - value)``, no underflow).

A CDF's derivative with respect to a shape parameter (``t.cdf``'s df) has no closed form: a
traced shape there is refused by name. Outside the support (logpdf = -inf, pdf = 0) the
derivative is 0. ``multivariate_normal`` and ``dirichlet`` have their own rules below; the
Poisson distribution is discrete (d/dmu only). tests/test_rules_stats.py checks every method
and argument against central finite differences.
"""

from __future__ import annotations

import numpy as np

from ....errors import UnsupportedError
from ...core import Primitive, Tracer, record_result, unwrap
from ...library import library_rule, original
from ...sums import unbroadcast
from ...where import user_location
from ..linalg import _one_triangle
from .functions import refuse

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _sp():
    import scipy.special as sp  # the program imported scipy.stats, which imports it

    return sp


# Standardised families: shape names, l_y(y, *shapes), {shape: l_shape(y, *shapes)}.
def _t_df(y, df):
    sp = _sp()
    y2 = y * y
    return 0.5 * (sp.digamma(0.5 * (df + 1.0)) - sp.digamma(0.5 * df) - 1.0 / df - np.log1p(y2 / df)
                  + (df + 1.0) * y2 / (df * (df + y2)))


FAMILIES = {
    "norm": ((), lambda y: -y, {}),
    "t": (("df",), lambda y, df: -(df + 1.0) * y / (df + y * y), {"df": _t_df}),
    "gamma": (("a",), lambda y, a: (a - 1.0) / y - 1.0, {"a": lambda y, a: np.log(y) - _sp().digamma(a)}),
    "beta": (("a", "b"), lambda y, a, b: (a - 1.0) / y - (b - 1.0) / (1.0 - y), {
        "a": lambda y, a, b: np.log(y) - _sp().digamma(a) + _sp().digamma(a + b),
        "b": lambda y, a, b: np.log1p(-y) - _sp().digamma(b) + _sp().digamma(a + b),
    }),
    "chi2": (("df",), lambda y, df: (0.5 * df - 1.0) / y - 0.5, {
        "df": lambda y, df: 0.5 * (np.log(y) - np.log(2.0) - _sp().digamma(0.5 * df)),
    }),
    "expon": ((), lambda y: -np.ones_like(y), {}),
    "laplace": ((), lambda y: -np.sign(y), {}),
    "logistic": ((), lambda y: -np.tanh(0.5 * y), {}),
    "cauchy": ((), lambda y: -2.0 * y / (1.0 + y * y), {}),
}
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")


def _standard(vals, nshapes):
    x, shapes, loc, scale = vals[0], vals[1:1 + nshapes], vals[1 + nshapes], vals[2 + nshapes]
    return (x - loc) / scale, shapes, scale


def _partial(dist: str, method: str, k: int):
    """d method / d argument k (elementwise), as a function of (ans, *vals)."""
    names, l_y, l_shapes = FAMILIES[dist]
    n = len(names)

    def d_logpdf(ans, vals):
        y, shapes, scale = _standard(vals, n)
        if k == 0 or k > n:
            ly = l_y(y, *shapes)
            if k == 0:
                return ly / scale
            return -ly / scale if k == n + 1 else -(y * ly + 1.0) / scale
        return l_shapes[names[k - 1]](y, *shapes)

    def cdf_factor(vals):  # d cdf / d argument k, divided by pdf(x) (shapes are refused before)
        return 1.0 if k == 0 else -1.0 if k == n + 1 else -_standard(vals, n)[0]

    def partial(ans, vals):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if method == "logpdf":
                return np.where(ans == -np.inf, 0.0, d_logpdf(ans, vals))
            if method == "pdf":
                return np.where(ans == 0.0, 0.0, ans * d_logpdf(ans, vals))
            sign = 1.0 if method in ("cdf", "logcdf") else -1.0  # sf = 1 - cdf
            if method in ("cdf", "sf"):
                return sign * cdf_factor(vals) * original(f"scipy.stats.{dist}.pdf")(*vals)
            logpdf = original(f"scipy.stats.{dist}.logpdf")(*vals)  # d log F = f / F = exp(log f - log F)
            return sign * cdf_factor(vals) * np.where(logpdf == -np.inf, 0.0, np.exp(logpdf - ans))

    return partial


def _elementwise(dist: str, method: str):
    names, _, l_shapes = FAMILIES[dist]
    params = ("x",) + names + ("loc", "scale")
    defaults = {"loc": 0.0, "scale": 1.0}
    name = f"scipy.stats.{dist}.{method}"
    has_vjp = [True] + [method in ("logpdf", "pdf") for _ in names] + [True, True]
    vjps = []
    for k in range(len(params)):
        part = _partial(dist, method, k)
        vjps.append((lambda part, k: lambda g, ans, *vals: unbroadcast(g * part(ans, vals), vals[k]))(part, k))
    prim = Primitive(name, None, *vjps)

    def rule(*args, **kwargs):
        vals = _bind(name, params, defaults, args, kwargs)
        for k, v in enumerate(vals):
            if isinstance(v, Tracer) and not has_vjp[k]:
                raise refuse(name, f"its shape parameter {params[k]}")
        ans = original(name)(*[unwrap(v) for v in vals])
        return record_result(prim, ans, tuple(vals), {})

    rule.__name__ = f"{dist}_{method}"
    return rule


def _bind(name, params, defaults, args, kwargs) -> list:
    """The arguments in ``params`` order (keywords and defaults filled in)."""
    if len(args) > len(params):
        raise TypeError(f"{name}() takes at most {len(params)} arguments ({len(args)} given)")
    vals = list(args) + [None] * (len(params) - len(args))
    for key, v in kwargs.items():
        if key not in params:
            raise UnsupportedError(f"{name}(..., {key}=...) with a traced value at {user_location(4)} is not supported")
        i = params.index(key)
        if i < len(args):
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        vals[i] = v
    for i, p in enumerate(params):
        if vals[i] is None:
            if p not in defaults:
                raise TypeError(f"{name}() missing required argument {p!r}")
            vals[i] = defaults[p]
    return vals


for _dist in FAMILIES:
    for _method in METHODS:
        library_rule(f"scipy.stats.{_dist}.{_method}", arrays="*")(_elementwise(_dist, _method))


# --- scipy.stats.poisson: discrete, d/dmu only -----------------------------------------------


def _poisson_partial(method):
    def vjp(g, ans, k, mu, loc):
        kk = np.asarray(k, dtype=float) - loc
        with np.errstate(divide="ignore", invalid="ignore"):
            if method == "logpmf":
                d = np.where(ans == -np.inf, 0.0, kk / mu - 1.0)
            elif method == "pmf":
                d = np.where(ans == 0.0, 0.0, ans * (kk / mu - 1.0))
            else:  # cdf(k) = Q(floor(k) + 1, mu): d/dmu = -pmf(floor(k), mu)
                d = -original("scipy.stats.poisson.pmf")(np.floor(kk), mu)
        return unbroadcast(g * d, mu)

    return vjp


def _poisson(method):
    name = f"scipy.stats.poisson.{method}"
    prim = Primitive(name, None, None, _poisson_partial(method), None)

    def rule(*args, **kwargs):
        vals = _bind(name, ("k", "mu", "loc"), {"loc": 0}, args, kwargs)
        for i, what in ((0, "k (a count)"), (2, "loc (a count)")):
            if isinstance(vals[i], Tracer):
                raise refuse(name, what)
        ans = original(name)(*[unwrap(v) for v in vals])
        return record_result(prim, ans, tuple(vals), {})

    return rule


for _method in ("logpmf", "pmf", "cdf"):
    library_rule(f"scipy.stats.poisson.{_method}", arrays="*")(_poisson(_method))


# --- scipy.stats.multivariate_normal ---------------------------------------------------------


def _mvn_parts(x, mean, cov):
    """(residuals (n, d), the symmetric covariance SciPy uses (read from cov's lower triangle),
    residuals times its inverse), with SciPy's own rules for the dimension and the points."""
    c = np.asarray(cov, dtype=float)
    d = (c.shape[0] if c.ndim == 2 else 1) if mean is None else np.size(mean)
    c = c * np.eye(d) if c.ndim == 0 else np.diag(c) if c.ndim == 1 else c
    sym = np.tril(c) + np.tril(c, -1).T
    pts = np.asarray(x, dtype=float)
    pts = pts.reshape(-1, 1) if pts.ndim == 0 or (pts.ndim == 1 and d == 1) else pts.reshape(-1, d)
    r = pts - (0.0 if mean is None else np.asarray(mean, dtype=float))
    return r, sym, np.linalg.solve(sym, r.T).T


def _mvn_cov_cotangent(G, cov):
    """From the cotangent of the symmetric covariance (for symmetric perturbations) to cov's."""
    c = np.ndim(cov)
    if c == 0:
        return np.trace(G)
    if c == 1:
        return np.diagonal(G).copy()
    return _one_triangle(G, lower=True)


def _mvn_vjp(k, method):
    def vjp(g, ans, x, mean, cov, allow_singular, cache):
        if "parts" not in cache:  # one solve serves the cotangents of x, mean and cov
            cache["parts"] = _mvn_parts(x, mean, cov)
        r, sym, alpha = cache["parts"]
        w = np.reshape(np.asarray(g * ans if method == "pdf" else g, dtype=float), (-1,))
        if k == 0:
            return np.reshape(-alpha * w[:, None], np.shape(x))
        if k == 1:
            return unbroadcast(np.sum(alpha * w[:, None], axis=0), mean)
        inv = np.linalg.inv(sym)
        G = -0.5 * np.sum(w) * inv + 0.5 * (alpha.T * w) @ alpha
        return _mvn_cov_cotangent(G, cov)

    return vjp


def _mvn(method):
    name = f"scipy.stats.multivariate_normal.{method}"
    prim = Primitive(name, None, _mvn_vjp(0, method), _mvn_vjp(1, method), _mvn_vjp(2, method))

    def rule(*args, **kwargs):
        vals = _bind(name, ("x", "mean", "cov", "allow_singular"), {"mean": None, "cov": 1, "allow_singular": False},
                     args, kwargs)
        if vals[3]:
            raise UnsupportedError(f"{name}(..., allow_singular=True) with a traced value at {user_location(3)} is not "
                                   "supported: its pseudo-inverse has no gradient where the covariance is singular")
        if isinstance(vals[2], Tracer) and np.ndim(vals[2].value) > 2 or np.ndim(unwrap(vals[2])) > 2:
            raise UnsupportedError(f"{name} with a stack of covariances at {user_location(3)}")
        ans = original(name)(*[unwrap(v) for v in vals])
        return record_result(prim, ans, tuple(vals), {"cache": {}})

    return rule


def _mvn_entropy_vjp(g, ans, mean, cov):
    _, sym, _ = _mvn_parts(0.0 if mean is None else mean, mean, cov)
    return _mvn_cov_cotangent(0.5 * g * np.linalg.inv(sym), cov)


_MVN_ENTROPY = Primitive("scipy.stats.multivariate_normal.entropy", None, None, _mvn_entropy_vjp)


@library_rule("scipy.stats.multivariate_normal.entropy", arrays="*")
def _mvn_entropy(mean=None, cov=1):
    ans = original("scipy.stats.multivariate_normal.entropy")(unwrap(mean), unwrap(cov))
    return record_result(_MVN_ENTROPY, ans, (mean, cov), {})


for _method in ("logpdf", "pdf"):
    library_rule(f"scipy.stats.multivariate_normal.{_method}", arrays="*")(_mvn(_method))


# --- scipy.stats.dirichlet: x's first axis holds the components ------------------------------


def _dirichlet_vjp(k, method):
    def vjp(g, ans, x, alpha):
        sp = _sp()
        xv = np.asarray(x, dtype=float)
        implied = xv.shape[0] == np.shape(alpha)[0] - 1  # the last component is 1 - sum(the others)
        full = np.concatenate([xv, 1.0 - np.sum(xv, axis=0, keepdims=True)]) if implied else xv
        w = np.asarray(g * ans if method == "pdf" else g, dtype=float)
        a = np.reshape(alpha, (-1,) + (1,) * (full.ndim - 1))
        if k == 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.where(a == 1.0, 0.0, (a - 1.0) / full) * w
            if implied:
                d = d[:-1] - d[-1:]
            return d
        d = (sp.digamma(np.sum(alpha)) - sp.digamma(a) + np.log(full)) * w
        return np.sum(d.reshape(d.shape[0], -1), axis=1) if d.ndim > 1 else d

    return vjp


def _dirichlet(method):
    name = f"scipy.stats.dirichlet.{method}"
    prim = Primitive(name, None, _dirichlet_vjp(0, method), _dirichlet_vjp(1, method))

    def rule(*args, **kwargs):
        vals = _bind(name, ("x", "alpha"), {}, args, kwargs)
        return record_result(prim, original(name)(*[unwrap(v) for v in vals]), tuple(vals), {})

    return rule


for _method in ("logpdf", "pdf"):
    library_rule(f"scipy.stats.dirichlet.{_method}", arrays="*")(_dirichlet(_method))
