"""Valid sample calls of every library rule the engine ships (``adcli.engine.library.RULES``:
SciPy's special, stats, linalg, signal and integrate functions, and NumPy's Python bodies that
take lists): what each argument means, which values keep it inside the function's domain and
away from kinks, and the shapes to try.

One table serves two users: ``tests/test_containers.py`` (every rule, every array-like argument
handed as a container holding traced values) and the fuzzer's ``library-container`` statement
kind (tests/fuzz/kinds_containers.py). A rule registered in the engine without an entry here
fails ``tests/test_containers.py::test_the_table_covers_every_library_rule``.

A call is source text with ``{name}`` placeholders, evaluated with ``np``, ``sp``
(scipy.special), ``st`` (scipy.stats), ``ss`` (scipy.signal), ``sl`` (scipy.linalg), ``si``
(scipy.integrate) and the ODE right-hand sides below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# --- ODE right-hand sides for odeint (also defined in every fuzz program's prelude) ----------


def _ode_decay(y, t, p):
    """y' = -p y + 0.1 sin(t): ``p`` may be a list or tuple (the caller's container)."""
    return -np.asarray(p) * y + 0.1 * np.sin(t)


def _ode_layers(y, t, params):
    """y' = a small network of y: ``params`` a list of (W, b) pairs."""
    h = y
    for W, b in params:
        h = np.tanh(np.asarray(W) @ h + np.asarray(b))
    return h - 0.5 * y


ODE_SOURCE = '''

def _ode_decay(y, t, p):
    return -np.asarray(p) * y + 0.1 * np.sin(t)


def _ode_layers(y, t, params):
    h = y
    for W, b in params:
        h = np.tanh(np.asarray(W) @ h + np.asarray(b))
    return h - 0.5 * y
'''


# --- argument domains ------------------------------------------------------------------------
# A domain is (lo, hi) for elementwise values, or one of the names below for matrices and
# counts. ``count`` arguments are integers (an order, a dimension, a band width, a Poisson
# count): a traced one must be refused, never given a zero gradient.

SPD, TRIL, TRIU, WELL, SIMPLEX, TIMES, COUNT = "spd", "tril", "triu", "well", "simplex", "times", "count"


@dataclass(frozen=True)
class Param:
    name: str
    domain: object  # (lo, hi) or one of the names above
    differentiable: bool = True  # False: a traced value here must be refused (an AdcliError)


@dataclass(frozen=True)
class Spec:
    rule: str  # the name in adcli.engine.library.RULES
    call: str  # source with {param} placeholders
    params: tuple  # of Param
    shapes: tuple  # of dicts: param name -> shape, one per sample
    rtol: float = 1e-5  # gradient against finite differences
    fixed: dict = field(default_factory=dict)  # param name -> a plain value (counts)


REAL, POS, UNIT, SMALL = (-1.0, 1.0), (0.6, 1.8), (0.2, 0.8), (-0.1, 0.1)


def sample(domain, shape, rng: np.random.Generator) -> np.ndarray:
    """Valid plain values of ``domain`` with ``shape`` (distinct, away from the edges)."""
    if isinstance(domain, tuple):
        n = int(np.prod(shape))
        lo, hi = domain
        grid = np.linspace(lo, hi, n + 2)[1:-1]
        return (rng.permutation(grid) + rng.uniform(-0.02, 0.02, n) * (hi - lo) / (n + 2)).reshape(shape)
    n = shape[0]
    m = rng.uniform(-0.5, 0.5, (n, n))
    if domain == SPD:
        return m @ m.T + n * np.eye(n)
    if domain == TRIL:
        return np.tril(m) + 2.5 * np.eye(n)
    if domain == TRIU:
        return np.triu(m) + 2.5 * np.eye(n)
    if domain == WELL:
        return 0.4 * m + 3.0 * np.eye(n)
    if domain == SIMPLEX:  # the first k - 1 components of a point of the simplex
        return np.linspace(0.15, 0.25, n) + rng.uniform(-0.02, 0.02, n)
    if domain == TIMES:
        return np.linspace(0.0, 0.6, n)
    if domain == COUNT:
        return rng.integers(1, 4, shape).astype(float)
    raise ValueError(domain)


def expression(domain, var: str, shape) -> str:
    """Source text mapping the traced values ``var`` (already of ``shape``) smoothly into
    ``domain`` (the fuzzer's way of keeping arguments valid)."""
    if isinstance(domain, tuple):
        lo, hi = domain
        return f"({lo!r} + {hi - lo!r} * sp.expit({var}))"
    n = shape[0]
    if domain == SPD:
        return f"({var} @ {var}.T * 0.1 + {n}.0 * np.eye({n}))"
    if domain == TRIL:
        return f"(np.tril({var}) * 0.2 + 2.5 * np.eye({n}))"
    if domain == TRIU:
        return f"(np.triu({var}) * 0.2 + 2.5 * np.eye({n}))"
    if domain == WELL:
        return f"(np.tanh({var}) * 0.2 + 3.0 * np.eye({n}))"
    if domain == SIMPLEX:
        return f"(0.15 + 0.1 * sp.expit({var}))"
    if domain == TIMES:
        return f"(np.linspace(0.0, 0.6, {n}) + 0.05 * np.tanh({var}) * np.arange({n}) / {n})"
    raise ValueError(domain)


# --- the table -------------------------------------------------------------------------------

_STATS = {  # family: (shape parameters with domains, x's domain, loc's domain)
    "norm": ((), REAL, REAL),
    "t": ((("df", (2.5, 6.0)),), REAL, REAL),
    "logistic": ((), REAL, REAL),
    "cauchy": ((), REAL, REAL),
    "laplace": ((), (0.6, 1.5), (-0.5, 0.2)),
    "gamma": ((("a", (1.5, 3.0)),), POS, SMALL),
    "chi2": ((("df", (2.5, 5.0)),), POS, SMALL),
    "expon": ((), POS, SMALL),
    "beta": ((("a", (1.5, 3.0)), ("b", (1.5, 3.0))), UNIT, (-0.05, 0.05)),
}
_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")


def _stats_specs():
    out = []
    for dist, (shapes, xdom, locdom) in _STATS.items():
        for method in _METHODS:
            params = [Param("x", xdom)]
            # a CDF's derivative in a shape parameter has no closed form: refused when traced
            params += [Param(s, d, differentiable=method in ("logpdf", "pdf")) for s, d in shapes]
            params += [Param("loc", locdom), Param("scale", (1.0, 1.2) if dist == "beta" else POS)]
            names = [p.name for p in params]
            call = f"st.{dist}.{method}(" + ", ".join("{" + n + "}" for n in names) + ")"
            variants = (
                {n: (3,) for n in names},
                {n: ((2, 3) if n == "x" else (3,)) for n in names},
                {n: ((2, 2) if n == "x" else (2, 1)) for n in names},
            )
            out.append(Spec(f"scipy.stats.{dist}.{method}", call, tuple(params), variants))
    return out


def _specs() -> list:
    out = _stats_specs()
    for method in ("logpmf", "pmf", "cdf"):
        out.append(Spec(f"scipy.stats.poisson.{method}", f"st.poisson.{method}({{k}}, {{mu}}, {{loc}})",
                        (Param("k", COUNT, False), Param("mu", POS), Param("loc", COUNT, False)),
                        ({"k": (3,), "mu": (3,), "loc": (1,)}, {"k": (2, 3), "mu": (3,), "loc": (1,)}),
                        fixed={"loc": np.array([0.0])}))
    for method in ("logpdf", "pdf"):
        out.append(Spec(f"scipy.stats.multivariate_normal.{method}",
                        f"st.multivariate_normal.{method}({{x}}, {{mean}}, {{cov}})",
                        (Param("x", REAL), Param("mean", (-0.5, 0.5)), Param("cov", SPD)),
                        ({"x": (2,), "mean": (2,), "cov": (2, 2)}, {"x": (3, 2), "mean": (2,), "cov": (2, 2)},
                         {"x": (3,), "mean": (3,), "cov": (3, 3)})))
        out.append(Spec(f"scipy.stats.dirichlet.{method}", f"st.dirichlet.{method}({{x}}, {{alpha}})",
                        (Param("x", SIMPLEX), Param("alpha", (1.5, 3.0))),
                        ({"x": (2,), "alpha": (3,)}, {"x": (3,), "alpha": (4,)})))
    out.append(Spec("scipy.stats.multivariate_normal.entropy", "st.multivariate_normal.entropy({mean}, {cov})",
                    (Param("mean", REAL), Param("cov", SPD)),
                    ({"mean": (2,), "cov": (2, 2)}, {"mean": (3,), "cov": (3, 3)})))
    out += [
        Spec("scipy.special.logsumexp", "sp.logsumexp({a}, b={b})", (Param("a", REAL), Param("b", POS)),
             ({"a": (3,), "b": (3,)}, {"a": (2, 3), "b": (2, 3)}, {"a": (2, 2), "b": (2,)})),
        Spec("scipy.special.softmax", "sp.softmax({x}, axis=-1)", (Param("x", REAL),), ({"x": (3,)}, {"x": (2, 3)})),
        Spec("scipy.special.log_softmax", "sp.log_softmax({x}, axis=-1)", (Param("x", REAL),),
             ({"x": (3,)}, {"x": (2, 3)})),
        Spec("scipy.special.multigammaln", "sp.multigammaln({a}, 2)", (Param("a", (2.0, 3.0)),),
             ({"a": (3,)}, {"a": (2, 2)})),
        Spec("scipy.special.polygamma", "sp.polygamma({n}, {x})", (Param("n", COUNT, False), Param("x", POS)),
             ({"n": (3,), "x": (3,)}, {"n": (1,), "x": (2, 2)})),
        Spec("scipy.signal.convolve", "ss.convolve({in1}, {in2}, mode='full')", (Param("in1", REAL), Param("in2", REAL)),
             ({"in1": (4,), "in2": (2,)}, {"in1": (2, 3), "in2": (2, 2)})),
        Spec("scipy.linalg.solve_triangular", "sl.solve_triangular({a}, {b}, lower=True)",
             (Param("a", TRIL), Param("b", REAL)), ({"a": (2, 2), "b": (2,)}, {"a": (3, 3), "b": (3, 2)})),
        Spec("scipy.linalg.sqrtm", "sl.sqrtm({A})", (Param("A", SPD),), ({"A": (2, 2)}, {"A": (3, 3)}), rtol=1e-4),
        Spec("scipy.linalg.solve_sylvester", "sl.solve_sylvester({a}, {b}, {q})",
             (Param("a", WELL), Param("b", WELL), Param("q", REAL)),
             ({"a": (2, 2), "b": (2, 2), "q": (2, 2)}, {"a": (3, 3), "b": (2, 2), "q": (3, 2)})),
        Spec("scipy.linalg.cholesky", "sl.cholesky({a}, lower=True)", (Param("a", SPD),),
             ({"a": (2, 2)}, {"a": (3, 3)})),
        Spec("scipy.linalg.solve_banded", "sl.solve_banded({lu}, {ab}, {b})",
             (Param("lu", COUNT, False), Param("ab", (0.2, 0.6)), Param("b", REAL)),
             ({"lu": (2,), "ab": (3, 3), "b": (3,)}, {"lu": (2,), "ab": (3, 4), "b": (4, 2)}),
             fixed={"lu": (1, 1)}),
        Spec("scipy.integrate.odeint", "si.odeint(_ode_decay, {y0}, {t}, args=({p},), rtol=1e-10, atol=1e-10)",
             (Param("y0", REAL), Param("t", TIMES), Param("p", POS)),
             ({"y0": (2,), "t": (3,), "p": (2,)}, {"y0": (3,), "t": (2,), "p": (3,)}), rtol=1e-4),
        Spec("scipy.integrate.odeint",
             "si.odeint(_ode_layers, {y0}, {t}, args=([({W}, {b})],), rtol=1e-10, atol=1e-10)",
             (Param("y0", REAL), Param("t", TIMES), Param("W", REAL), Param("b", REAL)),
             ({"y0": (2,), "t": (3,), "W": (2, 2), "b": (2,)},), rtol=1e-4),
        # NumPy's Python bodies, served with lists of traced values (engine/rules/reductions.py)
        Spec("numpy._core.fromnumeric.sum._implementation", "np.sum({a}, axis=0)", (Param("a", REAL),),
             ({"a": (3,)}, {"a": (2, 3)})),
        Spec("numpy._core.fromnumeric.mean._implementation", "np.mean({a}, axis=-1)", (Param("a", REAL),),
             ({"a": (3,)}, {"a": (2, 3)})),
        Spec("numpy._core.fromnumeric.std._implementation", "np.std({a})", (Param("a", REAL),), ({"a": (3,)}, {"a": (2, 3)})),
        Spec("numpy._core.fromnumeric.var._implementation", "np.var({a}, axis=0)", (Param("a", REAL),),
             ({"a": (3,)}, {"a": (3, 2)})),
        Spec("numpy._core.fromnumeric.max._implementation", "np.max({a}, axis=0)", (Param("a", REAL),),
             ({"a": (3,)}, {"a": (3, 2)})),
        Spec("numpy._core.fromnumeric.min._implementation", "np.min({a})", (Param("a", REAL),), ({"a": (3,)}, {"a": (2, 3)})),
        Spec("numpy._core.fromnumeric.prod._implementation", "np.prod({a}, axis=-1)", (Param("a", POS),),
             ({"a": (3,)}, {"a": (2, 3)})),
        Spec("numpy.linalg._linalg.norm._implementation", "np.linalg.norm({a})", (Param("a", REAL),),
             ({"a": (3,)}, {"a": (2, 3)})),
        Spec("numpy.lib._function_base_impl.append._implementation", "np.append({a}, {b})",
             (Param("a", REAL), Param("b", REAL)), ({"a": (3,), "b": (2,)}, {"a": (2, 2), "b": (3,)})),
        Spec("numpy.lib._index_tricks_impl.AxisConcatenator.__getitem__", "np.r_[{a}, {b}]",
             (Param("a", REAL), Param("b", REAL)), ({"a": (3,), "b": (2,)}, {"a": (2, 2), "b": (1, 2)})),
    ]
    return out


SPECS = _specs()


def namespace() -> dict:
    """The names a call's source text uses."""
    import scipy.integrate as si
    import scipy.linalg as sl
    import scipy.signal as ss
    import scipy.special as sp
    import scipy.stats as st

    return {"np": np, "sp": sp, "st": st, "ss": ss, "sl": sl, "si": si, "_ode_decay": _ode_decay,
            "_ode_layers": _ode_layers}
