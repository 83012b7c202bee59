"""Statement kinds for SciPy's Python functions served through library dispatch points
(engine/library.py): logsumexp and kin, scipy.stats distributions, convolve, scipy.linalg.
Arguments are kept inside each function's domain and away from kinks."""

from __future__ import annotations

import numpy as np

from .ctx import _broadcasts_to, kind


@kind("scipy-logsumexp", 1.2)
def _logsumexp(c):
    v = c.pick_nd(1, 3)
    nd = c.val(v).ndim
    axis = c.choice([None] + list(range(-nd, nd)))
    keep = c.choice(["", ", keepdims=True"])
    fn = c.choice(["sp.logsumexp", "sp.softmax", "sp.log_softmax"])
    if fn != "sp.logsumexp":
        keep = ""
    b = ""
    if fn == "sp.logsumexp" and c.r.random() < 0.3:
        b = f", b={c.positive(c.pick(lambda a: _broadcasts_to(a.shape, c.val(v).shape)))}"
    return f"{c.new()} = {fn}({v}, axis={axis}{keep}{b})"


# (distribution, shape parameters' domain) for the generic location-scale rules
_FAMILIES = {"norm": 0, "t": 1, "logistic": 0, "cauchy": 0, "laplace": 0, "gamma": 1, "beta": 2, "chi2": 1, "expon": 0}


@kind("scipy-stats", 1.5)
def _stats(c):
    dist = c.choice(sorted(_FAMILIES))
    x = c.pick()
    shape = np.shape(c.val(x))
    n = _FAMILIES[dist]
    method = c.choice(["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"] if dist not in ("laplace",) else ["logpdf", "pdf"])
    if dist in ("gamma", "chi2", "expon"):
        xs = c.positive(x, 0.4)
    elif dist == "beta":
        xs = f"(sp.expit({x}) * 0.8 + 0.1)"
    elif dist == "laplace":
        xs = c.away(x, (0.0,), 0.2)
    else:
        xs = c.bounded(x, 2.5)
    shapes = []
    for _ in range(n):
        s = c.operand(shape)
        shapes.append(f"({s} * {s} + 1.5)" if method in ("logpdf", "pdf") else c.choice(["2.5", "3.0"]))
    loc, scale = "0.0", "1.0"
    if dist not in ("gamma", "chi2", "expon", "beta", "laplace"):
        loc = c.choice(["0.0", c.operand(shape)])
        loc = f"np.tanh({loc}) * 0.5" if loc != "0.0" else loc
        scale = c.choice(["1.0", f"({c.positive(c.pick())})"])
    args = ", ".join([xs] + shapes + [loc, scale])
    return f"{c.new()} = st.{dist}.{method}({args})"


@kind("scipy-mvn", 0.8)
def _mvn(c):
    x = c.pick_nd(1, 2, lambda a: 1 <= a.shape[-1] <= 4)
    d = c.val(x).shape[-1]
    m = c.choice(["None", c.lit((d,)), f"np.tanh({x}).mean(axis=0)" if c.val(x).ndim == 2 else f"np.tanh({x}) * 0.5"])
    sq = c.floats(lambda a: a.size >= d * d)
    if sq and c.r.random() < 0.7:
        a = c.r.choice(sq)
        cov = f"(np.ravel({a})[:{d * d}].reshape({d}, {d}) @ np.ravel({a})[:{d * d}].reshape({d}, {d}).T + np.eye({d}))"
    else:
        cov = f"np.eye({d}) * {c.positive(c.pick(lambda a: a.ndim == 0) if c.floats(lambda a: a.ndim == 0) else x)}"
        if "np.eye" in cov and c.val(x).ndim and "(" not in cov.split("*")[1]:
            cov = f"np.eye({d})"
    method = c.choice(["logpdf", "pdf"])
    return f"{c.new()} = st.multivariate_normal.{method}({x}, {m}, {cov})"


@kind("scipy-convolve", 0.8)
def _convolve(c):
    a = c.pick_nd(1, 2)
    b = c.pick(lambda v: v.ndim == c.val(a).ndim and v.size <= 12)
    mode = c.choice(["full", "same", "valid"])
    if mode == "valid" and not (all(x >= y for x, y in zip(c.val(a).shape, c.val(b).shape))
                                or all(x <= y for x, y in zip(c.val(a).shape, c.val(b).shape))):
        mode = "full"
    return f"{c.new()} = ss.convolve({a}, {b}, mode={mode!r})"


@kind("scipy-linalg", 0.8)
def _linalg(c):
    m = c.pick(lambda a: a.ndim == 2 and a.shape[0] == a.shape[1] and 1 <= a.shape[0] <= 4)
    n = c.val(m).shape[0]
    which = c.choice(["solve_triangular", "cholesky", "sqrtm"])
    spd = f"({m} @ {m}.T + {n} * np.eye({n}))"
    if which == "solve_triangular":
        b = c.pick(lambda a: a.ndim in (1, 2) and a.shape[0] == n) if c.floats(lambda a: a.ndim in (1, 2) and a.shape[0] == n) \
            else c.lit((n,))
        lower = c.choice([True, False])
        tri = f"(np.tril({m}) + {n + 1.5} * np.eye({n}))" if lower else f"(np.triu({m}) + {n + 1.5} * np.eye({n}))"
        return f"{c.new()} = sl.solve_triangular({tri}, {b}, lower={lower}, trans={c.choice([0, 1])})"
    if which == "cholesky":
        return f"{c.new()} = sl.cholesky({spd}, lower={c.choice([True, False])})"
    return f"{c.new()} = sl.sqrtm({spd})"
